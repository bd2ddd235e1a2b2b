package stream

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// maxReplayEvents bounds a session's log by count; its maxBytes
	// (serve's --replay-buffer) bounds it by bytes.
	maxReplayEvents = 1024
	// maxParked bounds the broken POST streams a session keeps for
	// resumption.
	maxParked = 8
	// retryMillis is the reconnection delay the priming event announces.
	retryMillis = 1000
)

// A ReplayStream is one SSE stream of a session, across the connections
// that carry it in turn.
type ReplayStream struct {
	no   int64
	seq  int64 // the last event id assigned (log.mu)
	sk   *Sink
	post bool

	gen    *holder // the connection now carrying the stream (log.mu)
	parked bool
}

// Sink returns the sink now carrying st.
func (st *ReplayStream) Sink() *Sink { return st.sk }

// IsPost reports whether st answers a POST (else it is a GET stream).
func (st *ReplayStream) IsPost() bool { return st.post }

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

// StopCh is closed when another connection takes st over.
func (l *ReplayLog) StopCh(st *ReplayStream) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return st.gen.stop
}

type ReplayEvent struct {
	stream, seq int64
	msg         []byte
}

// A ReplayLog is a session's record of written events and of the streams
// that may still continue. A nil log disables resumability.
type ReplayLog struct {
	mu       sync.Mutex
	maxBytes int
	budget   *ReplayBudget // what every session's log shares (nil: none)
	size     atomic.Int64  // bytes, for the budget to read without mu
	closed   bool          // the session ended: nothing is kept any more
	events   []ReplayEvent // oldest first
	bytes    int
	next     int64
	streams  map[int64]*ReplayStream // live or parked POST streams, the GET stream
	parked   []*ReplayStream         // oldest first
	get      *ReplayStream           // the current standalone GET stream
	oldGets  []int64                 // recent GET streams replaced by a newer one
}

// maxOldGets bounds the replaced GET streams remembered as such.
const maxOldGets = 16

// NewReplayLog returns a session's log, keeping at most maxBytes and
// sharing budget (nil: none) with the other sessions' logs; nil when
// maxBytes is not positive (resumability off).
func NewReplayLog(maxBytes int, budget *ReplayBudget) *ReplayLog {
	if maxBytes <= 0 {
		return nil
	}
	l := &ReplayLog{maxBytes: maxBytes, budget: budget, streams: map[int64]*ReplayStream{}}
	if budget != nil {
		budget.join(l)
	}
	return l
}

// Open starts a new stream carried by sk.
func (l *ReplayLog) Open(sk *Sink, post bool) *ReplayStream {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	st := &ReplayStream{no: l.next, sk: sk, post: post, gen: newHolder()}
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
func (l *ReplayLog) record(st *ReplayStream, msg []byte) []byte {
	l.mu.Lock()
	st.seq++
	id := eventID(st.no, st.seq)
	if l.closed {
		l.mu.Unlock()
		return id
	}
	l.events = append(l.events, ReplayEvent{stream: st.no, seq: st.seq, msg: msg})
	l.bytes += len(msg)
	before := l.bytes
	drop := 0
	for len(l.events)-drop > maxReplayEvents || (l.bytes > l.maxBytes && drop < len(l.events)) {
		l.bytes -= len(l.events[drop].msg)
		l.events[drop] = ReplayEvent{}
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
func (l *ReplayLog) account(delta int64) {
	l.size.Add(delta)
	if l.budget != nil {
		l.budget.total.Add(delta)
	}
}

// trim drops the log's oldest events, at least one and until n bytes are
// gone (or none is left), for the shared budget. It reports whether it
// dropped any.
func (l *ReplayLog) trim(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop, freed := 0, int64(0)
	for drop < len(l.events) && (drop == 0 || freed < n) {
		freed += int64(len(l.events[drop].msg))
		l.events[drop] = ReplayEvent{}
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

// Close forgets every event and leaves the budget: the session ended, so
// no client can resume any more.
func (l *ReplayLog) Close() {
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
func (l *ReplayLog) lastID(st *ReplayStream) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventID(st.no, st.seq)
}

// LetGo ends a connection's hold on st. A POST stream whose request is
// still pending is parked for resumption (reported true); otherwise the
// stream can be replayed but not continued.
func (l *ReplayLog) LetGo(st *ReplayStream, pending bool) bool {
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
		old.sk.Close()
	}
	return true
}

// Attach makes sk the sink of a continued GET stream.
func (l *ReplayLog) Attach(st *ReplayStream, sk *Sink) {
	l.mu.Lock()
	st.sk = sk
	l.mu.Unlock()
}

// IsParked reports whether sk belongs to a parked stream: the messages a
// session may place on any stream do not go there.
func (l *ReplayLog) IsParked(sk *Sink) bool {
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

// WasGet reports whether no named a GET stream since replaced.
func (l *ReplayLog) WasGet(no int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.oldGets, no)
}

// Takeover prepares the resumption of stream no after event seq: it waits
// until the connection now carrying the stream lets go (done closes if the
// resuming client leaves first), then returns the logged events that
// followed seq and the stream, now held by the caller, if it continues.
// known is false when the session has no trace of the stream.
func (l *ReplayLog) Takeover(no, seq int64, done <-chan struct{}) (missed []ReplayEvent, st *ReplayStream, gap, known bool) {
	l.mu.Lock()
	st = l.streams[no]
	var gen *holder
	var sk *Sink
	if st != nil {
		gen, sk = st.gen, st.sk
	}
	l.mu.Unlock()
	if st != nil {
		// The old connection may not have noticed that it is dead; make it
		// stop so that everything it wrote is in the log before replaying.
		gen.takeOver()
		if !st.post {
			sk.End()
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

// ParseEventID reads a Last-Event-ID the bridge issued; only the canonical
// form is accepted (no signs, leading zeros or spaces).
func ParseEventID(s string) (stream, seq int64, ok bool) {
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
