package lifecycle

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// Goroutines calling Go while another closes and waits: every f that Go
// accepted has returned when Wait returns, and none is accepted after
// Close began. A WaitGroup with a closed flag checked outside its lock
// fails this under -race (Add concurrent with Wait) or with the runtime's
// "WaitGroup is reused" panic.
func TestGoRacingClose(t *testing.T) {
	for range 10 {
		var g Group
		var started, finished atomic.Int64
		busy := make(chan struct{})
		var busyOnce sync.Once
		var callers sync.WaitGroup
		for range 16 {
			callers.Go(func() {
				// Start goroutines until Go refuses: Close lands while
				// every caller is in the middle of calling Go.
				for g.Go(func() {
					if started.Add(1) == 200 {
						busyOnce.Do(func() { close(busy) })
					}
					finished.Add(1)
				}) {
				}
				if g.State() == Running {
					t.Error("Go refused while running")
				}
			})
		}
		<-busy
		g.Wait()
		if got, want := finished.Load(), started.Load(); got != want {
			t.Fatalf("Wait returned with %d of %d goroutines finished", got, want)
		}
		n := finished.Load()
		callers.Wait()
		if finished.Load() != n {
			t.Fatalf("goroutines ran after Wait returned: %d, then %d", n, finished.Load())
		}
		if g.State() != Closed {
			t.Fatalf("state %v after Wait", g.State())
		}
	}
}

func TestGoAfterCloseRefuses(t *testing.T) {
	var g Group
	g.Close()
	g.Close() // idempotent
	if g.Go(func() { t.Error("ran after Close") }) {
		t.Fatal("Go accepted after Close")
	}
	select {
	case <-g.Closing():
	default:
		t.Fatal("Closing not closed by Close")
	}
	g.Wait()
}

// The Closing channel is what long-lived goroutines stop on; State goes
// running → closing → closed as they do.
func TestStatesAndClosing(t *testing.T) {
	var g Group
	if g.State() != Running || g.State().String() != "running" {
		t.Fatalf("new group: %v", g.State())
	}
	stop := g.Closing()
	stopped := make(chan struct{})
	proceed := make(chan struct{})
	if !g.Go(func() {
		<-stop
		close(stopped)
		<-proceed
	}) {
		t.Fatal("Go refused on a running group")
	}
	g.Close()
	<-stopped
	if s := g.State(); s != Closing || s.String() != "closing" {
		t.Fatalf("closed with a goroutine left: %v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.CloseAndWait(ctx); err != context.Canceled {
		t.Fatalf("CloseAndWait with an ended ctx: %v", err)
	}
	close(proceed)
	var waiters sync.WaitGroup
	for range 4 {
		waiters.Go(g.Wait)
	}
	waiters.Wait()
	if err := g.CloseAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := g.State(); s != Closed || s.String() != "closed" {
		t.Fatalf("after Wait: %v", s)
	}
}
