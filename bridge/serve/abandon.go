package serve

import (
	"context"
	"time"
)

// Sessions whose clients are gone: a host that never sends DELETE (Gemini
// CLI) leaves its session, and the session's child, behind. They are
// ended by the idle timeouts (reap) and, at --max-sessions, for a new
// session (evict); their clients get 404 and initialize again.

// reap ends sessions that have had no client attached for longer than the
// idle timeout, calls pending or not: a client that left mid-call would
// otherwise keep its session, and its child, for good (100 of them locked
// every legacy client out).
//
// A session with a child of its own is also ended once it has had no
// request and no open stream for --child-idle-timeout (shorter): its
// child, a whole server process, is what an abandoned session costs.
func (t *sessionTable) reap(ctx context.Context) {
	idle, childIdle := t.h.cfg.idleTimeout(), t.h.cfg.childIdleTimeout()
	if idle < 0 && childIdle < 0 {
		return
	}
	period := time.Minute
	for _, d := range []time.Duration{idle, childIdle} {
		if d >= 0 {
			period = min(period, d/4+time.Millisecond)
		}
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		type stale struct {
			s      *session
			reason string
		}
		var ended []stale
		for _, s := range t.all() {
			s.mu.Lock()
			quiet := time.Since(s.lastActive)
			switch {
			case s.attached > 0:
			case idle >= 0 && quiet > idle:
				ended = append(ended, stale{s, "idle timeout"})
			case childIdle >= 0 && s.host != nil && len(s.pending) == 0 && quiet > childIdle:
				ended = append(ended, stale{s, "child idle timeout: no request and no open stream for " + childIdle.String() + "; its child is stopped"})
			}
			s.mu.Unlock()
		}
		for _, st := range ended {
			st.s.end(st.reason)
		}
	}
}

// idleSince returns when s last had a client attached, or false while it
// has one, or a call in flight: only such a session may be ended for
// being abandoned.
func (s *session) idleSince() (time.Time, bool) {
	if s.tr != nil && s.tr.Asking() {
		return time.Time{}, false // the client owes an answer to an input round
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached > 0 || len(s.pending) > 0 || s.ended {
		return time.Time{}, false
	}
	return s.lastActive, true
}

// evict ends the least recently active session with no open stream and
// nothing pending, to make room for a new one at --max-sessions; false
// when every session is in use. Hosts that never DELETE (Gemini CLI) left
// one session per run until the idle timeout, and past --max-sessions
// every newcomer got 503; the ended session's client gets 404 on its next
// request and initializes again, as the transport says it must.
func (t *sessionTable) evict() bool {
	var oldest *session
	var since time.Time
	for _, s := range t.all() {
		if at, ok := s.idleSince(); ok && (oldest == nil || at.Before(since)) {
			oldest, since = s, at
		}
	}
	if oldest == nil {
		return false
	}
	oldest.end("evicted for a new session at --max-sessions (least recently active, idle " + time.Since(since).Round(time.Millisecond).String() + ")")
	return true
}
