package serve

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// unbudgeted accounts for sinks outside any Handler: no total budget, the
// default per-stream bound.
var unbudgeted = &limits{
	maxInflight: math.MaxInt64, maxBuffered: math.MaxInt64,
	perStream: 32 << 20, holding: map[*sink]bool{},
}

// Input rounds (2026-07-28 mrtr) hold state between a server's request for
// input and the client's answers: bounded in count and in bytes (one
// stream's bound), so neither a child nor a client can grow it at will.
// (A translated legacy session's bounds are legacysession's.)
const maxRoundInputs = 64 // input requests of one call awaiting answers

// limits are the budgets every stream and child of a Handler share:
// requests in flight toward children, and the bytes held for clients.
//
// A byte is held from the moment a child's message is queued for a client
// until it has been written to the client's connection (or dropped): a
// client that does not read keeps a write blocked and the message with it,
// so the message stays charged until the write ends.
type limits struct {
	log  zerolog.Logger
	warn *ratelog.Kinds

	maxInflight int64
	inflight    atomic.Int64 // calls registered at any child

	maxBuffered int64
	perStream   int64 // what one stream may hold: one message, or the queue up to this

	mu       sync.Mutex
	buffered int64          // held across every stream
	holding  map[*sink]bool // streams holding bytes (charged > 0)
}

func newLimits(cfg *Config, log zerolog.Logger, warn *ratelog.Kinds) *limits {
	return &limits{
		log: log, warn: warn,
		maxInflight: cfg.maxInflight(),
		maxBuffered: cfg.maxBuffered(),
		perStream:   int64(cfg.maxMessage()),
		holding:     map[*sink]bool{},
	}
}

// newSink returns a sink charged to the Handler's budget.
func (h *Handler) newSink(want int) *sink {
	s := newSink(want)
	s.lim = h.lim
	return s
}

// admit refuses a new request with 503 and Retry-After while the budgets
// are spent: too many requests in flight toward children, or the bytes held
// for clients at the limit (the streams holding the most are being cut).
func (h *Handler) admit(w http.ResponseWriter, id []byte) bool {
	l := h.lim
	var why string
	switch {
	case l.inflight.Load() >= l.maxInflight:
		why = "mcp-bridge: too many requests in flight (" + strconv.FormatInt(l.maxInflight, 10) + ")"
	case l.spent():
		why = "mcp-bridge: too much data held for clients that do not read"
	default:
		return true
	}
	h.warn.Warn(h.log, "busy").Str("reason", why).Msg("request refused with 503")
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, id, wire.CodeInternalError, why, nil)
	return false
}

func (l *limits) spent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buffered >= l.maxBuffered
}

// started and ended count calls registered at a child. A nil *limits (a
// connection outside any Handler) counts nothing.
func (l *limits) started() {
	if l != nil {
		l.inflight.Add(1)
	}
}

func (l *limits) ended(n int) {
	if l != nil && n > 0 {
		l.inflight.Add(-int64(n))
	}
}

// charge books n more bytes on s. It reports false if s may not hold them
// (it already holds something and would exceed the per-stream bound), and
// returns the streams to cut so that the total stays within the budget:
// the ones holding the most, possibly s itself.
func (l *limits) charge(s *sink, n int) (ok bool, victims []*sink) {
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
		var big *sink
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
func (l *limits) release(s *sink, n int64) {
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
func (l *limits) cutAll(victims []*sink) {
	for _, v := range victims {
		l.mu.Lock()
		held := v.charged
		l.mu.Unlock()
		l.warn.Warn(l.log, "stream_cut").Int64("held_bytes", held).Int64("max_buffered", l.maxBuffered).
			Msg("bytes held for clients over --max-buffered; the stream holding the most was cut")
		v.cut()
	}
}
