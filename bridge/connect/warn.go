package connect

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// warnPeriod is how often one kind of warning a remote can provoke per
// message may reach the log.
const warnPeriod = 10 * time.Second

// limited lets one kind of log line through at most once per warnPeriod
// and counts what it held back, so that a hostile or broken remote that
// sends thousands of bad messages a second costs one line per period, not
// one per message (issue 8: "repeated warnings rate-limited or
// summarized").
type limited struct {
	mu   sync.Mutex
	next time.Time
	held int
}

// event returns the event to log at level, or nil (on which zerolog's
// methods are no-ops) while the kind is held back. A line that follows
// held-back ones says how many with "suppressed".
func (l *limited) event(log *zerolog.Logger, level zerolog.Level) *zerolog.Event {
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
	l.next, l.held = now.Add(warnPeriod), 0
	l.mu.Unlock()
	e := log.WithLevel(level)
	if held > 0 {
		e = e.Int("suppressed", held)
	}
	return e
}

// warnings are the log lines a remote can provoke once per message.
type warnings struct {
	badMessage  limited // not JSON, not a JSON-RPC message
	badTool     limited // a tools/list entry with invalid x-mcp-header annotations
	refused     limited // a server request answered on the host's behalf
	undeclared  limited // input asked for that the host did not declare
	notAccepted limited // a POSTed notification or response refused
	listenBroke limited // a subscriptions/listen stream the remote keeps closing
}
