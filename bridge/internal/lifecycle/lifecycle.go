// Package lifecycle is the one way a long-lived object of the bridge
// (serve.Handler, connect.Bridge, gateway.Gateway, the aggregate's
// sessions) starts goroutines it owns and joins them when it closes.
//
// Each of them used to keep its own: a sync.WaitGroup, a closed flag, a
// stop channel and a sync.Once. Two mistakes kept coming back with that:
//
//   - Add after Wait. A request that passed the "not closed" check just
//     before Close began to wait started one more goroutine on the
//     WaitGroup being waited on; the runtime panics on that ("WaitGroup is
//     reused before previous Wait has returned") or Close returns with the
//     goroutine still running.
//   - Go after Close. A goroutine started once Close has decided what to
//     wait for is owned by no one: it leaks, and whatever it touches may
//     already be torn down.
//
// A Group makes both impossible by construction: Go and Close take the
// same lock, so once Close has begun Go refuses (and says so), and the
// wait counts its goroutines itself instead of racing a WaitGroup.
package lifecycle

import (
	"context"
	"sync"
)

// State is where a Group is in its life.
type State int

const (
	// Running: Go starts goroutines.
	Running State = iota
	// Closing: Close has begun; Go refuses, goroutines already started
	// may still run.
	Closing
	// Closed: Close has begun and every goroutine started has returned.
	Closed
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Closing:
		return "closing"
	default:
		return "closed"
	}
}

// A Group owns goroutines: Go starts them, Close stops new ones, Wait
// joins them. The zero value is ready to use; a Group must not be copied
// after first use.
type Group struct {
	mu      sync.Mutex
	n       int           // goroutines started and not yet returned
	closing bool          // Close has begun
	stop    chan struct{} // closed by Close; made on first need
	done    chan struct{} // closed once closing and n is 0; made on first need
}

// Go runs f on a new goroutine owned by g and reports true, or, once
// Close has begun, does nothing and reports false: the caller must then
// do what f's goroutine would have cleaned up itself.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.n++
	go g.run(f)
	return true
}

// run is every goroutine of a Group: f, then the count.
func (g *Group) run(f func()) {
	defer g.exit()
	f()
}

func (g *Group) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.closing {
		close(g.doneLocked())
	}
}

// Closing returns a channel closed once Close has begun: the goroutines
// of g select on it to know they should return.
func (g *Group) Closing() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopLocked()
}

// Close makes Go refuse from now on and closes the Closing channel. It
// does not wait; calling it again does nothing.
func (g *Group) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return
	}
	g.closing = true
	close(g.stopLocked())
	if g.n == 0 {
		close(g.doneLocked())
	}
}

// Wait closes g (Close) and returns once every goroutine it started has
// returned. Any number of callers may wait.
func (g *Group) Wait() {
	g.Close()
	<-g.doneChan()
}

// CloseAndWait is Wait bounded by ctx: it returns ctx's error if ctx ends
// first (the goroutines are then still running and still owned by g).
func (g *Group) CloseAndWait(ctx context.Context) error {
	g.Close()
	select {
	case <-g.doneChan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State returns where g is: Running, Closing or Closed.
func (g *Group) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.closing:
		return Running
	case g.n > 0:
		return Closing
	default:
		return Closed
	}
}

func (g *Group) doneChan() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.doneLocked()
}

func (g *Group) stopLocked() chan struct{} {
	if g.stop == nil {
		g.stop = make(chan struct{})
	}
	return g.stop
}

func (g *Group) doneLocked() chan struct{} {
	if g.done == nil {
		g.done = make(chan struct{})
	}
	return g.done
}
