package stream

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"
)

// unbudgeted accounts for sinks outside any Handler: no total budget, the
// default per-stream bound.
var unbudgeted = &Limits{
	maxInflight: math.MaxInt64, maxBuffered: math.MaxInt64,
	perStream: 32 << 20, holding: map[*Sink]bool{},
}

// Limits are the budgets every stream and child of a Handler share:
// requests in flight toward children, and the bytes held for clients.
//
// A byte is held from the moment a child's message is queued for a client
// until it has been written to the client's connection (or dropped): a
// client that does not read keeps a write blocked and the message with it,
// so the message stays charged until the write ends.
type Limits struct {
	log  zerolog.Logger
	warn *ratelog.Kinds

	maxInflight int64
	inflight    atomic.Int64 // calls registered at any child

	maxBuffered int64
	perStream   int64 // what one stream may hold: one message, or the queue up to this

	mu       sync.Mutex
	buffered int64          // held across every stream
	holding  map[*Sink]bool // streams holding bytes (charged > 0)
}

// NewLimits returns the budgets of one Handler: at most maxInflight calls
// registered at its children, maxBuffered bytes held for clients in all,
// perStream bytes for one stream (one message, or a queue up to this).
func NewLimits(log zerolog.Logger, warn *ratelog.Kinds, maxInflight, maxBuffered, perStream int64) *Limits {
	return &Limits{
		log: log, warn: warn,
		maxInflight: maxInflight,
		maxBuffered: maxBuffered,
		perStream:   perStream,
		holding:     map[*Sink]bool{},
	}
}

// NewSink returns a sink charged to these budgets.
func (l *Limits) NewSink(want int) *Sink {
	s := NewSink(want)
	s.lim = l
	return s
}

// Busy says why a new request must be refused (503 and Retry-After) while
// the budgets are spent: too many requests in flight toward children, or
// the bytes held for clients at the limit (the streams holding the most
// are being cut). It is "" when the request may go on.
func (l *Limits) Busy() string {
	switch {
	case l.inflight.Load() >= l.maxInflight:
		return "mcp-bridge: too many requests in flight (" + strconv.FormatInt(l.maxInflight, 10) + ")"
	case l.spent():
		return "mcp-bridge: too much data held for clients that do not read"
	}
	return ""
}

func (l *Limits) spent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buffered >= l.maxBuffered
}

// Started and Ended count calls registered at a child. A nil *Limits (a
// connection outside any Handler) counts nothing.
func (l *Limits) Started() {
	if l != nil {
		l.inflight.Add(1)
	}
}

func (l *Limits) Ended(n int) {
	if l != nil && n > 0 {
		l.inflight.Add(-int64(n))
	}
}

// charge books n more bytes on s. It reports false if s may not hold them
// (it already holds something and would exceed the per-stream bound), and
// returns the streams to cut so that the total stays within the budget:
// the ones holding the most, possibly s itself.
func (l *Limits) charge(s *Sink, n int) (ok bool, victims []*Sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.charged > 0 && s.charged+int64(n) > l.perStream {
		return false, nil
	}
	if s.charged == 0 {
		s.since = time.Now()
	}
	s.charged += int64(n)
	l.buffered += int64(n)
	l.holding[s] = true
	if l.buffered <= l.maxBuffered {
		return true, nil
	}
	// Over budget: cut the largest holders until the rest fits; of equal
	// ones, the one that has held bytes longest (a client that reads lets
	// go of them, one that does not keeps them). Their
	// bytes are released when the cut lands (queued ones at once, one in a
	// blocked write when the write is aborted), so the total is projected.
	// Streams cut already are about to let go of theirs.
	total := l.buffered
	for h := range l.holding {
		if h.cutting {
			total -= h.charged
		}
	}
	for total > l.maxBuffered {
		var big *Sink
		for h := range l.holding {
			if h.cutting {
				continue
			}
			if big == nil || h.charged > big.charged || h.charged == big.charged && h.since.Before(big.since) {
				big = h
			}
		}
		if big == nil {
			break
		}
		big.cutting = true
		total -= big.charged
		victims = append(victims, big)
	}
	return true, victims
}

// release returns n bytes of s to the budget.
func (l *Limits) release(s *Sink, n int64) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	s.charged -= n
	l.buffered -= n
	if s.charged <= 0 {
		delete(l.holding, s)
	}
	l.mu.Unlock()
}

// cutAll cuts the victims charge picked, logging why.
func (l *Limits) cutAll(victims []*Sink) {
	for _, v := range victims {
		l.mu.Lock()
		held := v.charged
		l.mu.Unlock()
		l.warn.Warn(l.log, "stream_cut").Int64("held_bytes", held).Int64("max_buffered", l.maxBuffered).
			Msg("bytes held for clients over --max-buffered; the stream holding the most was cut")
		v.cut()
	}
}

// PerStream is what one client stream may hold, which also bounds what the
// bridge keeps for one call or session while no stream is open. A nil
// *Limits has the default bound.
func (l *Limits) PerStream() int {
	if l == nil {
		return int(unbudgeted.perStream)
	}
	return int(l.perStream)
}

// Inflight returns the calls registered at any child.
func (l *Limits) Inflight() int64 { return l.inflight.Load() }

// Buffered returns the bytes held for clients across every stream.
func (l *Limits) Buffered() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buffered
}
