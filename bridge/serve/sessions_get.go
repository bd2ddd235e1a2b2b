package serve

// A 2025 session's standalone stream: the GET that carries what the
// server sends unasked, resumable from the session's replay log.

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

func (t *sessionTable) serveGet(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(wire.HeaderSessionID) == "" {
		// Without a legacy session there is no standalone stream; 2026-07-28
		// clients never open one (streamable-http: GET SHOULD get 405).
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, nil, wire.CodeInvalidRequest, "Method not allowed: GET needs an Mcp-Session-Id", nil)
		return
	}
	if !acceptsSSE(r.Header["Accept"]) {
		writeError(w, http.StatusNotAcceptable, nil, wire.CodeInvalidRequest, "Not Acceptable: Accept must list text/event-stream", nil)
		return
	}
	s := t.sessionFor(w, r, nil)
	if s == nil {
		return
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" && s.replay != nil {
		if no, seq, ok := stream.ParseEventID(id); ok && s.resume(w, r, no, seq) {
			return
		}
		// Not a stream of this session (or long gone): a fresh GET stream.
	}
	sk := t.h.newSink(-1)
	st := s.replay.Open(sk, false)
	rsp := stream.NewResponder(w, false)
	// The standalone stream is what a 2025 client keeps open for the whole
	// session, mostly waiting: it leaves net/http while it waits, as a
	// 2026-07-28 progress stream does (stream/detach.go). Its connection carries
	// nothing else anyway, so "Connection: close" costs nothing here.
	rsp.MayDetach(r, false)
	rsp.Resumable(s.replay, st, s.primes())
	s.runGet(r, rsp, st, sk)
}

// runGet carries the session's standalone stream on one GET connection.
func (s *session) runGet(r *http.Request, rsp *stream.Responder, st *stream.ReplayStream, sk *stream.Sink) {
	t := s.t
	s.mu.Lock()
	old := s.get
	s.get = sk
	backlog := s.backlog
	s.backlog, s.backlogLen = nil, 0
	s.mu.Unlock()
	if old != nil {
		// A reconnecting client replaces its stream; the old connection is
		// probably dead already (supergateway#126: a 409 here was fatal).
		old.End()
	}
	for _, m := range backlog {
		sk.Push(m, false)
	}
	if ew := s.entryOf(r); ew != nil {
		ew.pump(r, rsp.WriteHeader, s.id, sk, s.endCh, t.h.closing.Done())
		s.endGet(st, sk)
		return
	}
	if rsp.StartSSE() != nil {
		s.endGet(st, sk)
		return
	}
	// A detached stream outlives its request, whose context held the
	// client's attachment to the session (sessionFor): the stream holds
	// one of its own until it ends, or the session would look idle.
	s.attach()
	t.h.streams.PumpDetachable(r, rsp, sk, s.endCh, t.h.closing.Done(), func(stream.PumpResult) {
		s.endGet(st, sk)
		s.detach()
	})
}

// endGet ends sk as the session's standalone stream.
func (s *session) endGet(st *stream.ReplayStream, sk *stream.Sink) {
	// What was queued but never written waits for the next GET, ahead of
	// anything newer.
	left := sk.CloseTake()
	s.mu.Lock()
	if s.get == sk {
		s.get = nil
	}
	if len(left) > 0 {
		s.backlog = append(left, s.backlog...)
		if n := len(s.backlog) - maxBacklog; n > 0 {
			s.backlog = s.backlog[n:]
		}
	}
	s.mu.Unlock()
	s.replay.LetGo(st, false)
}
