package hostio

import (
	"runtime"
	"sync"
	"testing"
)

// waitIdle waits until n workers are parked (they park right after their
// function returns, on their own goroutine).
func waitIdle(w *workers, n int) {
	for w.idleCount() != n {
		runtime.Gosched()
	}
}

// TestWorkersReuseIdle: a request after another runs on the goroutine the
// first one left idle (a kept goroutine keeps its grown stack), and
// requests at the same time each get their own.
func TestWorkersReuseIdle(t *testing.T) {
	w := newWorkers()
	done := make(chan struct{})
	for range 100 {
		w.Go(func() { done <- struct{}{} })
		<-done
		waitIdle(w, 1)
	}
	if w.started != 1 {
		t.Fatalf("100 requests one after another started %d goroutines, want 1", w.started)
	}

	// Three at once: the idle one and two new ones.
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(3)
	for range 3 {
		w.Go(func() { running.Done(); <-release })
	}
	running.Wait()
	close(release)
	waitIdle(w, 3)
	if w.started != 3 {
		t.Fatalf("3 requests at once: %d goroutines started in all, want 3", w.started)
	}
	w.close()
	w.wait() // goleak (TestMain) checks that they are gone
}

// TestWorkersCloseWhileRunning: close does not cut a running function
// short, and its worker exits after it instead of parking.
func TestWorkersCloseWhileRunning(t *testing.T) {
	w := newWorkers()
	release, finished := make(chan struct{}), make(chan struct{})
	w.Go(func() { <-release; close(finished) })
	w.close()
	close(release)
	w.wait()
	select {
	case <-finished:
	default:
		t.Fatal("wait returned before the running function finished")
	}
	if n := w.idleCount(); n != 0 {
		t.Fatalf("%d workers parked after close, want 0", n)
	}
}
