package stream

import (
	"sync"
	"time"
)

// writers do the writes of detached streams (responder.run) so that a
// waiting stream's own goroutine keeps the 2 KiB stack it started with:
// writing to a connection and framing a response need a deeper stack, and
// the runtime does not shrink the stack of a goroutine that then waits in a
// select, so a stream that wrote once would hold 4 KiB while it waits — a
// thousand waiting streams, 4 MiB (docs/benchmarks.md).
//
// A few writer goroutines live as long as the Handler (their stacks grown
// once). A write that finds none of them idle — they are all writing, or
// blocked on clients that read slowly — runs on a goroutine of its own,
// whose stack goes back to the runtime when it ends: a slow client never
// holds up another stream's write.
type writers struct {
	once, stop sync.Once
	jobs       chan task // unbuffered: a send succeeds only to an idle writer
	quit       chan struct{}
	wg         sync.WaitGroup
}

// A writeJob is one step of one stream's pump, done by a writer. Each
// detached stream has one (it waits for its step before the next).
type writeJob struct {
	r    *Responder
	s    *Sink
	op   pumpOp
	res  PumpResult
	more bool
	done chan struct{} // 1-buffered: the step is done
}

// writersPerHandler is how many writers wait for work. A write of a small
// event takes microseconds, so a few keep up with many streams; more
// would only hold more grown stacks.
const writersPerHandler = 4

// A task is what a writer runs: a stream's step (writeJob), or a stream
// that waits by events (evStream).
type task interface{ run() }

// do runs j on an idle writer, or on a goroutine of its own, and waits.
func (w *writers) do(j *writeJob) {
	w.submit(j)
	<-j.done
}

// submit runs t on an idle writer, or on a goroutine of its own; it does
// not wait.
func (w *writers) submit(t task) { w.submitBy(t, time.Time{}) }

func (j *writeJob) run() {
	j.res, j.more = j.r.do(j.s, j.op)
	j.done <- struct{}{}
}

// submitBy is submit that waits for an idle writer until deadline first
// (a zero deadline: not at all).
func (w *writers) submitBy(t task, deadline time.Time) {
	w.once.Do(w.start)
	select {
	case w.jobs <- t:
		return
	default:
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		go t.run()
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case w.jobs <- t:
	case <-timer.C:
		go t.run()
	}
}

func (w *writers) start() {
	jobs, quit := make(chan task), make(chan struct{})
	w.jobs, w.quit = jobs, quit
	w.wg.Add(writersPerHandler)
	for range writersPerHandler {
		go func() {
			defer w.wg.Done()
			for {
				select {
				case j := <-jobs:
					j.run()
				case <-quit:
					return
				}
			}
		}()
	}
}

// close stops the writers (a stream still writing then writes on a
// goroutine of its own) and waits for them.
// It may run more than once.
func (w *writers) close() {
	w.once.Do(func() {}) // none started: none will be
	w.stop.Do(func() {
		if w.quit != nil {
			close(w.quit)
		}
	})
	w.wg.Wait()
}
