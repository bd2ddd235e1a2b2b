package serve

import "sync"

// maxQueued bounds what one stream may hold for a client that reads too
// slowly; past it the stream is cut rather than the bridge's memory.
const maxQueued = 256 << 20

// A sink queues the messages bound for one HTTP response stream. The child's
// reader goroutine pushes without ever blocking; the request's goroutine
// drains and writes.
type sink struct {
	mu      sync.Mutex
	q       [][]byte
	bytes   int
	wake    chan struct{} // 1-buffered: "the queue changed"
	want    int           // final responses still expected; <0: unbounded stream
	closed  bool          // the stream is gone: pushes are refused
	overrun bool
}

func newSink(want int) *sink { return &sink{wake: make(chan struct{}, 1), want: want} }

// push queues msg. final marks a response that completes one expected
// request. It reports false if the stream is gone, so that a caller with a
// choice of streams can try another.
func (s *sink) push(msg []byte, final bool) bool {
	s.mu.Lock()
	if s.closed || s.want == 0 {
		s.mu.Unlock()
		return false
	}
	if s.bytes+len(msg) > maxQueued {
		s.overrun, s.closed = true, true
		s.q = nil
	} else {
		s.q = append(s.q, msg)
		s.bytes += len(msg)
		if final && s.want > 0 {
			s.want--
		}
	}
	s.mu.Unlock()
	s.signal()
	return true
}

// end marks an unbounded stream complete (a listen stream torn down by the
// child, a session that ended).
func (s *sink) end() {
	s.mu.Lock()
	s.want = 0
	s.mu.Unlock()
	s.signal()
}

func (s *sink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the queued messages and whether the stream is complete (every
// expected response has been queued, or the stream was ended).
func (s *sink) take() (msgs [][]byte, complete, overrun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, s.q, s.bytes = s.q, nil, 0
	return msgs, s.want == 0, s.overrun
}

// close refuses further pushes; the stream's reader is gone.
func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.q = nil
	s.mu.Unlock()
}

// closeTake is close that hands back what was queued and not yet taken,
// for a caller that can still deliver it elsewhere.
func (s *sink) closeTake() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	q := s.q
	s.q, s.bytes = nil, 0
	return q
}
