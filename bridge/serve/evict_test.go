package serve

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	if n := b.replays.Count(); n != 0 {
		t.Fatalf("%d replay logs left in the budget after 50 failed initializes, want 0", n)
	}
}

// A session with a child of its own that has had no request and no open
// stream for --child-idle-timeout is ended, its child stopped: its next
// request gets 404. A session whose GET stream is open is kept.
func TestChildIdleTimeoutEndsSession(t *testing.T) {
	// 2 s, not 300 ms: busy's GET stream must open before busy itself goes
	// idle, which a loaded machine can miss in 300 ms.
	b := startBridge(t, Config{ChildIdleTimeout: 2 * time.Second}, bins["memos"])
	idle := legacyInit(t, b.URL, "", "2025-11-25")
	busy := legacyInit(t, b.URL, "", "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := mcpRequest(ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": busy, "Accept": "text/event-stream"})
	resp, err := http.DefaultClient.Do(get)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	ping := func(sid string) int {
		resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
		return resp.StatusCode
	}
	began := time.Now()
	for !strings.Contains(b.log.String(), "child idle timeout") {
		if time.Since(began) > 10*time.Second {
			t.Fatalf("idle session still there after %v (child idle timeout 2s)", time.Since(began))
		}
		time.Sleep(20 * time.Millisecond) // polling the log: a ping would restart the idle clock
	}
	t.Logf("idle session ended %v after it went quiet (child idle timeout 2s)", time.Since(began).Round(time.Millisecond))
	if got := ping(idle); got != http.StatusNotFound {
		t.Errorf("ended session: ping %d, want 404", got)
	}
	if got := ping(busy); got != 200 {
		t.Errorf("session with an open GET stream: ping %d, want 200", got)
	}
}

// At --max-sessions, only a session with no open stream and nothing
// pending is ended for a newcomer, the least recently active first; when
// every session is in use the newcomer gets 503 + Retry-After.
func TestMaxSessionsEvictsOnlyIdle(t *testing.T) {
	b := startBridge(t, Config{MaxSessions: 2, SessionMode: SessionShared}, bins["memos"])
	ping := func(sid string) int {
		resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
		return resp.StatusCode
	}
	older := legacyInit(t, b.URL, "", "2025-11-25")
	newer := legacyInit(t, b.URL, "", "2025-11-25")
	ping(older) // older is now the more recently active one
	third := legacyInit(t, b.URL, "", "2025-11-25")
	if got := ping(newer); got != http.StatusNotFound {
		t.Errorf("least recently active session: ping %d, want 404 (evicted)", got)
	}
	if got := ping(older); got != 200 {
		t.Errorf("more recently active session: ping %d, want 200", got)
	}
	// Both left are in use: each has its GET stream open.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, sid := range []string{older, third} {
		get := mcpRequest(ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream"})
		resp, err := http.DefaultClient.Do(get)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", err, resp)
		}
		defer resp.Body.Close()
	}
	resp, body := rawPost(t, b.URL, initBody, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("initialize with every session in use: %d %s, want 503 + Retry-After", resp.StatusCode, body)
	}
}
