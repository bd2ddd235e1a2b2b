package serve

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
)

// Resumable streams of legacy (2025-03-26 and later) sessions, 2025-11-25
// transports §Resumability and Redelivery. Every SSE event the bridge
// writes to a session carries an id "<stream>_<seq>": the stream (a POST's
// response stream or a GET stream) and the event's place in it. A bounded
// log per session keeps what was written; a GET with Last-Event-ID replays
// what followed that event on that stream and, if the stream is still
// going, continues it on the new connection.
//
// A POST stream whose connection breaks while its request is pending is
// parked: its sink stays open, so the child's progress and answer for that
// request keep queuing (under the sink's own bound) until the client
// resumes, the session ends, or newer parked streams push it out.

const (
	// maxReplayEvents bounds a session's log by count; Config.ReplayBuffer
	// bounds it by bytes.
	maxReplayEvents = 1024
	// maxParked bounds the broken POST streams a session keeps for
	// resumption.
	maxParked = 8
	// retryMillis is the reconnection delay the priming event announces.
	retryMillis = 1000
)

// A replayStream is one SSE stream of a session, across the connections
// that carry it in turn.
type replayStream struct {
	no   int64
	seq  int64 // the last event id assigned (log.mu)
	sk   *sink
	post bool

	gen    *holder // the connection now carrying the stream (log.mu)
	parked bool
}

// A holder is one connection's hold on a stream: stop is closed to take
// the stream over from it, released when it has let go.
type holder struct {
	stop     chan struct{}
	stopOnce sync.Once
	released chan struct{}
}

func newHolder() *holder {
	return &holder{stop: make(chan struct{}), released: make(chan struct{})}
}

func (g *holder) takeOver() { g.stopOnce.Do(func() { close(g.stop) }) }

// stopCh is closed when another connection takes st over.
func (l *replayLog) stopCh(st *replayStream) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return st.gen.stop
}

type replayEvent struct {
	stream, seq int64
	msg         []byte
}

// replayLog is a session's record of written events and of the streams
// that may still continue. A nil log disables resumability.
type replayLog struct {
	mu       sync.Mutex
	maxBytes int
	budget   *replayBudget // what every session's log shares (nil: none)
	size     atomic.Int64  // bytes, for the budget to read without mu
	closed   bool          // the session ended: nothing is kept any more
	events   []replayEvent // oldest first
	bytes    int
	next     int64
	streams  map[int64]*replayStream // live or parked POST streams, the GET stream
	parked   []*replayStream         // oldest first
	get      *replayStream           // the current standalone GET stream
	oldGets  []int64                 // recent GET streams replaced by a newer one
}

// maxOldGets bounds the replaced GET streams remembered as such.
const maxOldGets = 16

// newReplayLog returns a session's log, keeping at most maxBytes and
// sharing budget (nil: none) with the other sessions' logs; nil when
// maxBytes is not positive (resumability off).
func newReplayLog(maxBytes int, budget *replayBudget) *replayLog {
	if maxBytes <= 0 {
		return nil
	}
	l := &replayLog{maxBytes: maxBytes, budget: budget, streams: map[int64]*replayStream{}}
	if budget != nil {
		budget.join(l)
	}
	return l
}

// open starts a new stream carried by sk.
func (l *replayLog) open(sk *sink, post bool) *replayStream {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	st := &replayStream{no: l.next, sk: sk, post: post, gen: newHolder()}
	l.streams[st.no] = st
	if !post {
		if l.get != nil {
			delete(l.streams, l.get.no) // replaced: it can be replayed, not continued
			l.oldGets = append(l.oldGets, l.get.no)
			if len(l.oldGets) > maxOldGets {
				l.oldGets = l.oldGets[1:]
			}
		}
		l.get = st
	}
	return st
}

// record assigns msg the next id of st and keeps it for replay (unless
// the session has ended).
func (l *replayLog) record(st *replayStream, msg []byte) []byte {
	l.mu.Lock()
	st.seq++
	id := eventID(st.no, st.seq)
	if l.closed {
		l.mu.Unlock()
		return id
	}
	l.events = append(l.events, replayEvent{stream: st.no, seq: st.seq, msg: msg})
	l.bytes += len(msg)
	before := l.bytes
	drop := 0
	for len(l.events)-drop > maxReplayEvents || (l.bytes > l.maxBytes && drop < len(l.events)) {
		l.bytes -= len(l.events[drop].msg)
		l.events[drop] = replayEvent{}
		drop++
	}
	if drop > 0 {
		l.events = l.events[drop:]
	}
	l.account(int64(len(msg)) - int64(before-l.bytes))
	l.mu.Unlock()
	if l.budget.over() {
		l.budget.shed()
	}
	return id
}

// account books delta bytes of the log (l.mu held) in its size and in the
// shared budget.
func (l *replayLog) account(delta int64) {
	l.size.Add(delta)
	if l.budget != nil {
		l.budget.total.Add(delta)
	}
}

// trim drops the log's oldest events, at least one and until n bytes are
// gone (or none is left), for the shared budget. It reports whether it
// dropped any.
func (l *replayLog) trim(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop, freed := 0, int64(0)
	for drop < len(l.events) && (drop == 0 || freed < n) {
		freed += int64(len(l.events[drop].msg))
		l.events[drop] = replayEvent{}
		drop++
	}
	if drop == 0 {
		return false
	}
	l.events = l.events[drop:]
	l.bytes -= int(freed)
	l.account(-freed)
	return true
}

// close forgets every event and leaves the budget: the session ended, so
// no client can resume any more.
func (l *replayLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	l.events = nil
	l.account(-int64(l.bytes))
	l.bytes = 0
	l.mu.Unlock()
	if l.budget != nil {
		l.budget.leave(l)
	}
}

// lastID is the id of st's latest event (its priming id when it has none).
func (l *replayLog) lastID(st *replayStream) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventID(st.no, st.seq)
}

// letGo ends a connection's hold on st. A POST stream whose request is
// still pending is parked for resumption (reported true); otherwise the
// stream can be replayed but not continued.
func (l *replayLog) letGo(st *replayStream, pending bool) bool {
	if l == nil || st == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	close(st.gen.released)
	if !st.post || !pending || l.streams[st.no] != st {
		if st.post {
			delete(l.streams, st.no)
		}
		return false
	}
	st.parked = true
	l.parked = append(l.parked, st)
	if len(l.parked) > maxParked {
		old := l.parked[0]
		l.parked = l.parked[1:]
		delete(l.streams, old.no)
		old.sk.close()
	}
	return true
}

// attach makes sk the sink of a continued GET stream.
func (l *replayLog) attach(st *replayStream, sk *sink) {
	l.mu.Lock()
	st.sk = sk
	l.mu.Unlock()
}

// isParked reports whether sk belongs to a parked stream: the messages a
// session may place on any stream do not go there.
func (l *replayLog) isParked(sk *sink) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.parked {
		if st.sk == sk {
			return true
		}
	}
	return false
}

// wasGet reports whether no named a GET stream since replaced.
func (l *replayLog) wasGet(no int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.oldGets, no)
}

// takeover prepares the resumption of stream no after event seq: it waits
// until the connection now carrying the stream lets go (done closes if the
// resuming client leaves first), then returns the logged events that
// followed seq and the stream, now held by the caller, if it continues.
// known is false when the session has no trace of the stream.
func (l *replayLog) takeover(no, seq int64, done <-chan struct{}) (missed []replayEvent, st *replayStream, gap, known bool) {
	l.mu.Lock()
	st = l.streams[no]
	var gen *holder
	var sk *sink
	if st != nil {
		gen, sk = st.gen, st.sk
	}
	l.mu.Unlock()
	if st != nil {
		// The old connection may not have noticed that it is dead; make it
		// stop so that everything it wrote is in the log before replaying.
		gen.takeOver()
		if !st.post {
			sk.end()
		}
		select {
		case <-gen.released:
		case <-done:
			return nil, nil, false, false
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	first := int64(-1)
	for _, ev := range l.events {
		if ev.stream == no && ev.seq > seq {
			if first < 0 {
				first = ev.seq
			}
			missed = append(missed, ev)
		}
	}
	if st == nil || l.streams[no] != st || st.gen != gen {
		// Finished, replaced or resumed elsewhere meanwhile: replay only.
		known = len(missed) > 0 || (no > 0 && no <= l.next)
		return missed, nil, first > seq+1, known
	}
	gap = (first > seq+1) || (first < 0 && st.seq > seq)
	// The caller's connection carries the stream from here on.
	st.gen = newHolder()
	if st.parked {
		st.parked = false
		for i, p := range l.parked {
			if p == st {
				l.parked = append(l.parked[:i], l.parked[i+1:]...)
				break
			}
		}
	}
	return missed, st, gap, true
}

// eventID formats a stream's event id: "<stream>_<seq>". 2025-11-25
// transports: the id "MUST be globally unique across all streams within
// that session" and "SHOULD encode sufficient information to identify the
// originating stream".
func eventID(stream, seq int64) []byte {
	b := strconv.AppendInt(nil, stream, 10)
	return strconv.AppendInt(append(b, '_'), seq, 10)
}

// parseEventID reads a Last-Event-ID the bridge issued; only the canonical
// form is accepted (no signs, leading zeros or spaces).
func parseEventID(s string) (stream, seq int64, ok bool) {
	a, b, found := strings.Cut(s, "_")
	if !found {
		return 0, 0, false
	}
	stream, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || stream <= 0 || seq < 0 || string(eventID(stream, seq)) != s {
		return 0, 0, false
	}
	return stream, seq, true
}

// primes reports whether the session's clients expect priming events.
func (s *session) primes() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return translate.ExpectsPriming(s.version)
}

// stream carries sk, the answers to a POST, as one resumable stream. When
// the connection breaks first, the stream is parked for a GET with
// Last-Event-ID; without resumability its messages are dropped. A
// detachable rsp may leave net/http while it waits (detach.go): after is
// then called when the stream ends, on the stream's goroutine, else before
// stream returns.
func (s *session) stream(r *http.Request, rsp *responder, sk *sink, after func()) {
	if s.sse != nil {
		s.sse.accepted(rsp)
		return
	}
	h := s.t.h
	st := s.replay.open(sk, true)
	rsp.resumable(s.replay, st, s.primes())
	var stop <-chan struct{} = h.killed.Done()
	if st != nil {
		stop = s.replay.stopCh(st)
	}
	// A detached stream outlives its request, whose context held the
	// client's attachment to the session: it holds one of its own.
	s.attach()
	h.pumpDetachable(r, rsp, sk, s.endCh, stop, func(res pumpResult) {
		s.release(st, sk, res)
		s.detach()
		if after != nil {
			after()
		}
	})
}

func (s *session) release(st *replayStream, sk *sink, res pumpResult) {
	if !s.replay.letGo(st, res != pumpComplete) && res != pumpComplete {
		sk.close()
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
	missed, st, gap, known := s.replay.takeover(no, seq, r.Context().Done())
	if !known {
		return false
	}
	if gap {
		s.log.Warn().Int64("stream", no).Int64("after_seq", seq).Msg("resumed stream: some events were no longer buffered (see --replay-buffer)")
	}
	s.log.Debug().Int64("stream", no).Int64("after_seq", seq).Int("replayed", len(missed)).Bool("continues", st != nil).Msg("stream resumed")
	rsp := newResponder(w, false)
	err := rsp.startSSE()
	for _, ev := range missed {
		if err != nil {
			break
		}
		err = rsp.writeEvent(eventID(ev.stream, ev.seq), ev.msg)
	}
	switch {
	case st == nil && err == nil && s.replay.wasGet(no):
		// A standalone stream that a newer GET replaced: after its missed
		// events, this connection becomes the session's GET stream (else
		// a client that resumes it would reconnect forever).
		sk := s.t.h.newSink(-1)
		st := s.replay.open(sk, false)
		rsp.resumable(s.replay, st, false)
		s.runGet(r, rsp, st, sk)
	case st == nil:
	case err != nil:
		s.release(st, st.sk, pumpClientGone)
	case st.post:
		rsp.resumable(s.replay, st, false)
		res := pump(r.Context(), rsp, st.sk, s.t.h.ka, s.endCh, s.replay.stopCh(st))
		s.release(st, st.sk, res)
	default:
		sk := s.t.h.newSink(-1)
		s.replay.attach(st, sk)
		rsp.resumable(s.replay, st, false)
		s.runGet(r, rsp, st, sk)
	}
	return true
}
