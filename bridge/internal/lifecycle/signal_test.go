package lifecycle

import (
	"sync"
	"testing"
)

// Any number of goroutines fire and watch one Signal: it closes once (a
// second close would panic) and every watcher sees it.
func TestSignalFiresOnce(t *testing.T) {
	var s Signal
	if s.Fired() {
		t.Fatal("fired before Fire")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { <-s.Done() })
		wg.Go(s.Fire)
	}
	wg.Wait()
	s.Fire()
	if !s.Fired() {
		t.Fatal("not fired after Fire")
	}
}
