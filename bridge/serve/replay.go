package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
)

// A legacy session's resumable streams (2025-11-25 transports
// §Resumability and Redelivery) over its stream.ReplayLog: each POST's
// answers are one stream, parked when its connection breaks while the
// request is pending; a GET with Last-Event-ID resumes it (resume).

// primes reports whether the session's clients expect priming events.
func (s *session) primes() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return translate.ExpectsPriming(s.version)
}

// stream carries sk, the answers to a POST, as one resumable stream. When
// the connection breaks first, the stream is parked for a GET with
// Last-Event-ID; without resumability its messages are dropped. A
// detachable rsp may leave net/http while it waits (stream.Engine): after is
// then called when the stream ends, on the stream's goroutine, else before
// stream returns.
func (s *session) stream(r *http.Request, rsp *stream.Responder, sk *stream.Sink, after func()) {
	if s.sse != nil {
		s.sse.accepted(rsp)
		return
	}
	h := s.t.h
	if ew := s.entryOf(r); ew != nil {
		// In-process: no connection to break, nothing to resume.
		if ew.pump(r, rsp.WriteHeader, s.id, sk, s.endCh, h.killed.Done()) != stream.PumpComplete {
			sk.Close()
		}
		if after != nil {
			after()
		}
		return
	}
	st := s.replay.Open(sk, true)
	rsp.Resumable(s.replay, st, s.primes())
	var stop <-chan struct{} = h.killed.Done()
	if st != nil {
		stop = s.replay.StopCh(st)
	}
	// A detached stream outlives its request, whose context held the
	// client's attachment to the session: it holds one of its own.
	s.attach()
	h.streams.PumpDetachable(r, rsp, sk, s.endCh, stop, func(res stream.PumpResult) {
		s.release(st, sk, res)
		s.detach()
		if after != nil {
			after()
		}
	})
}

func (s *session) release(st *stream.ReplayStream, sk *stream.Sink, res stream.PumpResult) {
	if !s.replay.LetGo(st, res != stream.PumpComplete) && res != stream.PumpComplete {
		sk.Close()
	}
}

// resume serves a GET with Last-Event-ID naming stream no: the events
// that followed seq on that stream, then the stream itself while it goes
// on. It reports false when the session knows no such stream. 2025-11-25
// transports: the server "MAY use this header to replay messages that would
// have been sent after the last event ID, on the stream that was
// disconnected, and to resume the stream from that point", and "MUST NOT
// replay messages that would have been delivered on a different stream".
func (s *session) resume(w http.ResponseWriter, r *http.Request, no, seq int64) bool {
	missed, st, gap, known := s.replay.Takeover(no, seq, r.Context().Done())
	if !known {
		return false
	}
	if gap {
		s.log.Warn().Int64("stream", no).Int64("after_seq", seq).Msg("resumed stream: some events were no longer buffered (see --replay-buffer)")
	}
	s.log.Debug().Int64("stream", no).Int64("after_seq", seq).Int("replayed", len(missed)).Bool("continues", st != nil).Msg("stream resumed")
	rsp := stream.NewResponder(w, false)
	err := rsp.StartSSE()
	for _, ev := range missed {
		if err != nil {
			break
		}
		err = rsp.Replay(ev)
	}
	switch {
	case st == nil && err == nil && s.replay.WasGet(no):
		// A standalone stream that a newer GET replaced: after its missed
		// events, this connection becomes the session's GET stream (else
		// a client that resumes it would reconnect forever).
		sk := s.t.h.newSink(-1)
		st := s.replay.Open(sk, false)
		rsp.Resumable(s.replay, st, false)
		s.runGet(r, rsp, st, sk)
	case st == nil:
	case err != nil:
		s.release(st, st.Sink(), stream.PumpClientGone)
	case st.IsPost():
		rsp.Resumable(s.replay, st, false)
		res := s.t.h.streams.Pump(r.Context(), rsp, st.Sink(), s.endCh, s.replay.StopCh(st))
		s.release(st, st.Sink(), res)
	default:
		sk := s.t.h.newSink(-1)
		s.replay.Attach(st, sk)
		rsp.Resumable(s.replay, st, false)
		s.runGet(r, rsp, st, sk)
	}
	return true
}
