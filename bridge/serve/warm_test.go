package serve

import (
	"testing"
	"time"
)

// waitWarm waits until n warm children have answered their ping.
func waitWarm(t *testing.T, b *testBridge, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for b.warm.Ready() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d warm children ready after 20s", b.warm.Ready(), n)
		}
		time.Sleep(20 * time.Millisecond) // polling the pool's state, not syncing goroutines
	}
}

// With --warm-children, a new 2025 session's initialize is answered by a
// child that booted ahead of time: the 2 s start of this one is not the
// session's to wait for. Without, it is. (With a 1 s start, the warm
// initialize had 0.5 s, which a loaded machine can miss; it has 1 s now.)
func TestWarmChildrenAnswerAtOnce(t *testing.T) {
	const delay = 2 * time.Second
	argv := []string{bins["memos"], "-start-delay", delay.String()}
	timeInit := func(b *testBridge) time.Duration {
		began := time.Now()
		legacyInit(t, b.URL, "", "2025-11-25")
		return time.Since(began)
	}
	t.Run("warm", func(t *testing.T) {
		b := startBridge(t, Config{WarmChildren: 2}, argv...)
		waitWarm(t, b, 2)
		for i := range 3 { // the third takes a child started after the first take
			if i == 2 {
				waitWarm(t, b, 2)
			}
			if d := timeInit(b); d > delay/2 {
				t.Errorf("session %d: initialize answered after %v with warm children, want < %v", i+1, d, delay/2)
			} else {
				t.Logf("session %d: initialize answered after %v (warm)", i+1, d.Round(time.Microsecond))
			}
		}
	})
	t.Run("cold", func(t *testing.T) {
		b := startBridge(t, Config{}, argv...)
		if d := timeInit(b); d < delay {
			t.Errorf("initialize answered after %v without warm children: the test child does not start slowly", d)
		} else {
			t.Logf("initialize answered after %v (cold)", d.Round(time.Millisecond))
		}
	})
}
