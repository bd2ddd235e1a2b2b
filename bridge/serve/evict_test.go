package serve

import (
	"os/exec"
	"sync/atomic"
	"testing"
)

// A 2025 initialize that fails (here: the session's child cannot start)
// leaves no replay log in the shared budget; 50 of them used to leave 50.
func TestFailedInitializeReleasesReplayLog(t *testing.T) {
	var starts atomic.Int64
	legacy := commandFor(bins["memos"], "-modern=false")
	b := startBridge(t, Config{Command: func() *exec.Cmd {
		if starts.Add(1) <= 2 { // the two era-probe siblings: a legacy-only server
			return legacy()
		}
		return exec.Command("/nonexistent/mcp-server-for-test")
	}})
	for range 50 {
		if resp, body := rawPost(t, b.URL, initBody, nil); resp.StatusCode < 500 {
			t.Fatalf("initialize with a child that cannot start: %d %s", resp.StatusCode, body)
		}
	}
	if n := b.replays.count(); n != 0 {
		t.Fatalf("%d replay logs left in the budget after 50 failed initializes, want 0", n)
	}
}
