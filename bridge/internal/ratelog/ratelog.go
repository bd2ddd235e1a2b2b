// Package ratelog keeps log lines that a hostile or broken peer can
// provoke once per message — a child flooding bad lines, a remote sending
// thousands of broken events a second — to one line per Period and kind,
// each saying how many were held back since the last ("suppressed"). Issue
// 8: "repeated warnings rate-limited or summarized". serve and connect both
// use it, so the behaviour and the field name are the same on both sides.
package ratelog

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Period is the least time between two lines of one kind.
const Period = 10 * time.Second

// A Limiter lets one kind of line through at most once per Period. The zero
// value is ready to use.
type Limiter struct {
	mu   sync.Mutex
	next time.Time
	held int
}

// Event returns the event to log at level, or nil (on which zerolog's
// methods are no-ops) while the kind is held back. A line that follows
// held-back ones carries "suppressed": how many.
func (l *Limiter) Event(log *zerolog.Logger, level zerolog.Level) *zerolog.Event {
	if log.GetLevel() > level {
		return nil // nothing would be written: no need to count
	}
	now := time.Now()
	l.mu.Lock()
	if now.Before(l.next) {
		l.held++
		l.mu.Unlock()
		return nil
	}
	held := l.held
	l.next, l.held = now.Add(Period), 0
	l.mu.Unlock()
	e := log.WithLevel(level)
	if held > 0 {
		e = e.Int("suppressed", held)
	}
	return e
}

// Kinds is a Limiter per kind of warning, for code whose kinds are named at
// the call (a fixed set of constants, so the map stays small). A nil Kinds
// limits nothing.
type Kinds struct {
	mu sync.Mutex
	m  map[string]*Limiter
}

// Warn returns a warning event for kind on log, or nil while that kind is
// held back (see Limiter.Event).
func (k *Kinds) Warn(log zerolog.Logger, kind string) *zerolog.Event {
	if k == nil {
		return log.Warn()
	}
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*Limiter{}
	}
	l := k.m[kind]
	if l == nil {
		l = &Limiter{}
		k.m[kind] = l
	}
	k.mu.Unlock()
	return l.Event(&log, zerolog.WarnLevel)
}
