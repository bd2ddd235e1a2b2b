package hostio

import (
	"slices"
	"sync"
	"time"
)

// workerIdle is how long a request goroutine waits for the next request
// before it exits: long enough to carry a steady load from one request to
// the next, short enough that a burst's goroutines do not linger.
const workerIdle = 2 * time.Second

// workers runs the bridge's per-request functions on goroutines that are
// kept for the next request instead of exiting.
//
// Why: a request's goroutine goes deep into net/http, so a fresh one grows
// its stack two or three times (each a copy) on every call, and with 1,024
// calls in flight the per-P stack caches run dry and every stack comes
// from the global pool under its lock. That was the largest part of what a
// call costs more at 1,024 in flight than at 64 (newstack, copystack and
// stackpoolalloc: 0.20 s → 0.65 s of CPU per 42,000 calls in
// scripts/bench/profile; docs/benchmarks.md). A kept goroutine keeps its
// grown stack.
//
// There are never more goroutines than functions running at once plus
// those idle for less than workerIdle. The idle ones form a stack: the one
// that parked last, whose stack is warm, runs the next function, and the
// surplus of a burst times out at the bottom. close ends the idle ones,
// and wait joins them all.
type workers struct {
	mu      sync.Mutex
	idle    []*worker // parked, the most recent last
	closed  bool
	started int // goroutines started so far (tests)

	quit chan struct{} // closed by close
	wg   sync.WaitGroup
}

// A worker is one kept goroutine; a function handed to it arrives on task.
type worker struct {
	task chan func() // buffered: handing over never blocks
}

func newWorkers() *workers {
	return &workers{quit: make(chan struct{})}
}

// Go runs f on an idle worker, or on a new one if none is idle. It never
// blocks. It must not be called after close.
func (w *workers) Go(f func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		wk := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		wk.task <- f
		return
	}
	w.started++
	w.mu.Unlock()
	wk := &worker{task: make(chan func(), 1)}
	w.wg.Go(func() { w.run(wk, f) })
}

func (w *workers) run(wk *worker, f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		f = nil // not kept alive while idle
		if !w.park(wk) {
			return
		}
		t.Reset(workerIdle)
		select {
		case f = <-wk.task:
			continue
		case <-t.C:
		case <-w.quit:
		}
		if w.unpark(wk) {
			return
		}
		// Go took this worker off the idle stack before it could leave:
		// the function is on its way.
		f = <-wk.task
	}
}

// park puts wk on the idle stack; false once the workers are closed.
func (w *workers) park(wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.idle = append(w.idle, wk)
	return true
}

// unpark takes wk off the idle stack; false if Go took it first.
func (w *workers) unpark(wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.idle, wk)
	if i < 0 {
		return false
	}
	w.idle = slices.Delete(w.idle, i, i+1)
	return true
}

// idleCount is the number of parked workers (tests).
func (w *workers) idleCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.idle)
}

// close tells idle workers to exit (running ones finish their function
// first); wait joins them.
func (w *workers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.quit)
	}
}

func (w *workers) wait() { w.wg.Wait() }
