package stream

import (
	"sync"
	"sync/atomic"
	"time"
)

// A sink queues the messages bound for one HTTP response stream. The child's
// reader goroutine pushes without ever blocking; the request's goroutine
// drains and writes.
//
// Every byte pushed is charged to the Handler's budget (see Limits) until the
// pump has written it (written) or the stream drops it: one stream may hold
// one message, or a queue up to --max-message-size; past that, or when the
// stream holds the most while the total is over --max-buffered, it is cut.
type Sink struct {
	lim *Limits

	mu      sync.Mutex
	q       [][]byte
	bytes   int           // queued, not yet taken
	wake    chan struct{} // 1-buffered: "the queue changed"
	want    int           // final responses still expected; <0: unbounded stream
	closed  bool          // the stream is gone: pushes are refused
	overrun bool
	abort   func()                   // ends a write blocked on the client; set by the pump
	ev      atomic.Pointer[evStream] // a stream served by events: kicked on every change
	// to, if set, is the stream that carries what is pushed here: the
	// sink keeps its own count of expected responses and its end, but
	// queues nothing and is charged nothing itself (an HTTP+SSE session's
	// calls all answer on its one stream: serve's sse.go).
	to *Sink

	charged int64     // held: queued plus taken and not yet written (lim.mu)
	cutting bool      // picked to be cut (lim.mu)
	since   time.Time // when charged last rose from zero (lim.mu)
}

// NewSink returns a sink that expects want final responses (<0: an
// unbounded stream), charged to no Handler's budget (Limits.NewSink is).
func NewSink(want int) *Sink {
	return &Sink{wake: make(chan struct{}, 1), want: want, lim: unbudgeted}
}

// Push queues msg. final marks a response that completes one expected
// request. It reports false if the stream is gone, so that a caller with a
// choice of streams can try another.
func (s *Sink) Push(msg []byte, final bool) bool {
	s.mu.Lock()
	if s.closed || s.want == 0 {
		s.mu.Unlock()
		return false
	}
	if s.to != nil {
		if final && s.want > 0 {
			s.want--
		}
		s.mu.Unlock()
		return s.to.Push(msg, false)
	}
	ok, victims := s.lim.charge(s, len(msg))
	if !ok {
		s.mu.Unlock()
		s.lim.warn.Warn(s.lim.log, "stream_overrun").Int64("max_bytes", s.lim.perStream).
			Msg("client reads too slowly: its stream's queue is full; stream cut")
		s.cut()
		return true
	}
	s.q = append(s.q, msg)
	s.bytes += len(msg)
	if final && s.want > 0 {
		s.want--
	}
	s.mu.Unlock()
	s.signal()
	s.lim.cutAll(victims)
	return true
}

// cut ends the stream for a client that holds too much: the queue is
// dropped, a write blocked on the client is aborted, and the pump ends.
func (s *Sink) cut() {
	s.mu.Lock()
	s.overrun, s.closed = true, true
	dropped := s.bytes
	s.q, s.bytes = nil, 0
	abort := s.abort
	s.mu.Unlock()
	s.lim.release(s, int64(dropped))
	if abort != nil {
		abort()
	}
	s.signal()
}

// End marks an unbounded stream complete (a listen stream torn down by the
// child, a session that ended).
func (s *Sink) End() {
	s.mu.Lock()
	s.want = 0
	s.mu.Unlock()
	s.signal()
}

func (s *Sink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if e := s.ev.Load(); e != nil {
		e.kick(evWake)
	}
}

// take returns the queued messages and whether the stream is complete (every
// expected response has been queued, or the stream was ended). The caller
// owns the messages and must hand each to drop once it is written or
// dropped.
func (s *Sink) take() (msgs [][]byte, complete, overrun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, s.q, s.bytes = s.q, nil, 0
	return msgs, s.want == 0, s.overrun
}

// Drain takes the queued messages out of the sink and its budget, and
// reports whether the stream is complete: the caller owns the messages (a
// caller that inspects a sink instead of pumping it, such as a test).
func (s *Sink) Drain() (msgs [][]byte, complete bool) {
	msgs, complete, _ = s.take()
	var n int64
	for _, m := range msgs {
		n += int64(len(m))
	}
	s.lim.release(s, n)
	return msgs, complete
}

// drop releases taken messages, written or not, and recycles their
// buffers.
func (s *Sink) drop(msgs [][]byte) {
	var n int64
	for i, m := range msgs {
		n += int64(len(m))
		putBuf(m)
		msgs[i] = nil
	}
	s.lim.release(s, n)
}

// keep releases taken messages whose buffers now belong to someone else
// (the replay log): their bytes leave the budget, the buffers are not
// recycled.
func (s *Sink) keep(msgs [][]byte) {
	var n int64
	for i, m := range msgs {
		n += int64(len(m))
		msgs[i] = nil
	}
	s.lim.release(s, n)
}

// setAbort installs the function that ends a write blocked on the client.
func (s *Sink) setAbort(f func()) {
	s.mu.Lock()
	s.abort = f
	cut := s.overrun
	s.mu.Unlock()
	if cut && f != nil {
		f()
	}
}

// Close refuses further pushes; the stream's reader is gone.
func (s *Sink) Close() {
	s.mu.Lock()
	s.closed = true
	dropped := s.bytes
	s.q, s.bytes = nil, 0
	s.mu.Unlock()
	s.lim.release(s, int64(dropped))
}

// CloseTake is Close that hands back what was queued and not yet taken,
// for a caller that can still deliver it elsewhere.
func (s *Sink) CloseTake() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	q := s.q
	s.q, s.bytes = nil, 0
	return q
}

// ForwardTo makes to carry what is pushed to s (an HTTP+SSE session's
// calls all answer on its one stream): s keeps its own count of expected
// responses and its end, but queues nothing and is charged nothing itself.
func (s *Sink) ForwardTo(to *Sink) { s.to = to }

// bigMessage is the size from which message buffers are recycled.
const bigMessage = 1 << 20

// bigPool recycles the buffers of large messages (tool results of several
// MiB): on a VM a fresh allocation costs a page fault per 4 KiB, more than
// copying the bytes.
var bigPool sync.Pool

// GetBuf returns an empty buffer for a message of about n bytes: pooled when
// n is large, nil (a plain allocation by the caller) otherwise. A sink
// recycles the buffer once the message is written (drop).
func GetBuf(n int) []byte {
	if n < bigMessage {
		return nil
	}
	if bp, _ := bigPool.Get().(*[]byte); bp != nil && cap(*bp) >= n {
		return (*bp)[:0]
	}
	return make([]byte, 0, n+n/8)
}

// putBuf hands a written message's buffer back for reuse.
func putBuf(b []byte) {
	if cap(b) >= bigMessage && cap(b) <= 64<<20 {
		b = b[:0]
		bigPool.Put(&b)
	}
}
