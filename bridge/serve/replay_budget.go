package serve

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
type replayBudget struct {
	max   int64
	total atomic.Int64

	mu   sync.Mutex
	logs map[*replayLog]struct{}
}

func newReplayBudget(max int64) *replayBudget {
	return &replayBudget{max: max, logs: map[*replayLog]struct{}{}}
}

func (b *replayBudget) join(l *replayLog) {
	b.mu.Lock()
	b.logs[l] = struct{}{}
	b.mu.Unlock()
}

func (b *replayBudget) leave(l *replayLog) {
	b.mu.Lock()
	delete(b.logs, l)
	b.mu.Unlock()
}

// over reports whether the logs together keep more than the budget.
func (b *replayBudget) over() bool { return b != nil && b.total.Load() > b.max }

// shed drops the oldest events of the largest logs until the total fits.
// It takes one log's lock at a time (never while holding another), so
// logs may call it after recording.
func (b *replayBudget) shed() {
	for b.over() {
		b.mu.Lock()
		var big *replayLog
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

// count returns the logs in the budget.
func (b *replayBudget) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.logs)
}
