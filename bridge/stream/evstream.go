package stream

import (
	"context"
	"sync"
	"time"
)

// An evStream is a detached 2026-07-28 call stream that waits without a
// goroutine of its own: the events it waits for — a message queued in its
// sink, its client going away, a keepalive tick — each hand the stream to a
// writer (writers.go), which serves every pending event and lets go. A
// waiting stream is then its connection, its sink and this struct: no 2 KiB
// stack, no goroutine descriptor, no select waiters (docs/benchmarks.md).
//
// Streams that also end on a channel (a listen stream on drain, a 2025
// session's streams when the session ends) keep a goroutine that selects
// on it (PumpDetachable).
type evStream struct {
	en   *Engine
	rsp  *Responder
	sk   *Sink
	rs   *rawStream
	ctx  context.Context
	done func(PumpResult)

	mu      sync.Mutex
	pending evMask
	busy    bool // a writer serves the stream, or it is over: kicks only mark
	ticks   int  // keepalive ticks seen

	// Only the writer serving the stream touches these.
	res      PumpResult
	stopGone func() bool
}

type evMask uint8

const (
	evWake evMask = 1 << iota // the sink changed
	evGone                    // the client went away, or the bridge ends the stream
	evTick                    // a keepalive tick
)

// serveEvents serves a detached stream by events from now on.
func (en *Engine) serveEvents(ctx context.Context, rsp *Responder, sk *Sink, rs *rawStream, done func(PumpResult)) {
	// Busy from the start: events that come during the set-up are only
	// marked, and served by the writer it ends with (e.mu is not held
	// here: the clock kicks under its own lock).
	e := &evStream{en: en, rsp: rsp, sk: sk, rs: rs, ctx: ctx, done: done, busy: true, pending: evWake}
	e.stopGone = context.AfterFunc(ctx, func() { e.kick(evGone) })
	en.ka.subscribe(e)
	sk.ev.Store(e) // from here on the sink kicks; evWake covers what came before
	rs.writers.submit(e)
}

// kick notes ev and, unless a writer already serves the stream, hands the
// stream to one. It never blocks.
func (e *evStream) kick(ev evMask) {
	if e.mark(ev, false) {
		e.rs.writers.submit(e)
	}
}

// tick is the keepalive clock's kick. As in pump, a keepalive goes out from
// the second tick on (the shared clock's first may come at once); the first
// hands the stream to no writer. Every waiting stream gets its tick at the
// same moment, so the stream waits for an idle writer — until the round's
// deadline — rather than start a goroutine of its own at once: thousands of
// streams do not become thousands of goroutines every interval, and
// writers blocked on slow clients hold a round up for tickRound at most.
func (e *evStream) tick(deadline time.Time) {
	if e.mark(evTick, true) {
		e.rs.writers.submitBy(e, deadline)
	}
}

// mark notes ev (a tick only from the second on) and reports whether the
// caller must hand the stream to a writer: none serves it yet.
func (e *evStream) mark(ev evMask, tick bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tick {
		if e.ticks++; e.ticks < 2 {
			return false
		}
	}
	e.pending |= ev
	if e.busy {
		return false
	}
	e.busy = true
	return true
}

// tickRound bounds how long one keepalive round waits for idle writers.
const tickRound = 100 * time.Millisecond

// run serves the pending events until there are none (or the stream is
// over); it runs on a writer.
func (e *evStream) run() {
	for {
		e.mu.Lock()
		ev := e.pending
		e.pending = 0
		if ev == 0 {
			e.busy = false
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		if res, over := e.step(ev); over {
			e.over(res) // busy stays set: later kicks are ignored
			return
		}
	}
}

// step is one turn of pump's loop for the events in ev.
func (e *evStream) step(ev evMask) (PumpResult, bool) {
	if ev&evGone != 0 {
		return PumpClientGone, true
	}
	if ev&evWake != 0 {
		if res, more := e.rsp.do(e.sk, opStep); !more {
			return res, true
		}
	}
	if ev&evTick != 0 { // counted by tick
		if res, more := e.rsp.do(e.sk, opComment); !more {
			return res, true
		}
	}
	return 0, false
}

// over ends the stream with res: a complete body is finished and the
// connection kept until the client closes it (or lingerTimeout, as
// rawStream.end does with a goroutine), then everything is released.
func (e *evStream) over(res PumpResult) {
	e.res = res
	e.en.ka.unsubscribe(e)
	e.sk.ev.Store(nil)
	e.sk.setAbort(nil)
	e.rsp.retire()
	e.stopGone()
	if res != PumpClientGone {
		if _, more := e.rsp.do(nil, opEnd); more {
			t := time.AfterFunc(lingerTimeout, e.rs.cancel)
			context.AfterFunc(e.ctx, func() {
				t.Stop()
				e.close()
			})
			return
		}
	}
	e.close()
}

// close releases the stream as PumpDetachable's goroutine does when its
// pump returns, and its count in the detached streams' WaitGroup.
func (e *evStream) close() {
	e.rs.close()
	e.en.streamEnded(e.rs, e.rsp, e.res, e.done)
	e.en.detached.wg.Done()
}
