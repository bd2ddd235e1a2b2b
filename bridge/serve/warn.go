package serve

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// warnEvery is the least time between two log lines of one kind of
// repeated warning. A child that floods the bridge with bad lines used to
// produce one WARN per line (100,000 lines/s); now it produces one line per
// interval that says how many were suppressed.
const warnEvery = 5 * time.Second

// A warner rate-limits repeated warnings by kind. The kinds are a fixed set
// of constants in the code, so its map stays small.
type warner struct {
	mu    sync.Mutex
	kinds map[string]*warnKind
}

type warnKind struct {
	last       time.Time
	suppressed int
}

// event returns a warning event on log for kind, or nil (on which zerolog's
// methods do nothing) if one was logged less than warnEvery ago. A logged
// event carries the number of warnings suppressed since the last one. A nil
// warner never suppresses.
func (w *warner) event(log zerolog.Logger, kind string) *zerolog.Event {
	if w == nil {
		return log.Warn()
	}
	now := time.Now()
	w.mu.Lock()
	if w.kinds == nil {
		w.kinds = map[string]*warnKind{}
	}
	k := w.kinds[kind]
	if k == nil {
		k = &warnKind{}
		w.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < warnEvery {
		k.suppressed++
		w.mu.Unlock()
		return nil
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	w.mu.Unlock()
	e := log.Warn()
	if n > 0 {
		e = e.Int("suppressed", n)
	}
	return e
}
