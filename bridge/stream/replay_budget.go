package stream

import (
	"sync"
	"sync/atomic"
)

// A replayBudget bounds what every session's replay log keeps together:
// each log alone is bounded by --replay-buffer (and maxReplayEvents), but
// --max-sessions of them at the defaults would be 400 MiB that no limit
// covered. The logs share --max-buffered, apart from the bytes queued for
// clients: a logged event is only kept in case a client resumes, so it is
// the first thing to give up — over the budget, the oldest events of the
// largest log are dropped (a client that resumes past them is told of the
// gap as with any evicted event), and no request is refused for it.
type ReplayBudget struct {
	max   int64
	total atomic.Int64

	mu   sync.Mutex
	logs map[*ReplayLog]struct{}
}

// NewReplayBudget returns a budget of max bytes for the logs that join it.
func NewReplayBudget(max int64) *ReplayBudget {
	return &ReplayBudget{max: max, logs: map[*ReplayLog]struct{}{}}
}

func (b *ReplayBudget) join(l *ReplayLog) {
	b.mu.Lock()
	b.logs[l] = struct{}{}
	b.mu.Unlock()
}

func (b *ReplayBudget) leave(l *ReplayLog) {
	b.mu.Lock()
	delete(b.logs, l)
	b.mu.Unlock()
}

// over reports whether the logs together keep more than the budget.
func (b *ReplayBudget) over() bool { return b != nil && b.total.Load() > b.max }

// shed drops the oldest events of the largest logs until the total fits.
// It takes one log's lock at a time (never while holding another), so
// logs may call it after recording.
func (b *ReplayBudget) shed() {
	for b.over() {
		b.mu.Lock()
		var big *ReplayLog
		var most int64
		for l := range b.logs {
			if n := l.size.Load(); n > most {
				big, most = l, n
			}
		}
		b.mu.Unlock()
		if big == nil || !big.trim(b.total.Load()-b.max) {
			return
		}
	}
}

// Count returns the logs in the budget.
func (b *ReplayBudget) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.logs)
}

// Total returns the bytes the logs keep together.
func (b *ReplayBudget) Total() int64 { return b.total.Load() }
