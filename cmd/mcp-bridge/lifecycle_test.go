package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Hosts that never DELETE cannot lock a bridge out: with --max-sessions
// 20, 40 clients initialize and vanish; each past the 20th ends the least
// recently active idle session; client 41 is served, and an evicted
// session's next request gets 404 (its client initializes again).
func TestServeEvictsAbandonedSessions(t *testing.T) {
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--max-sessions", "20", "--", bin["memos"])
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	var ids []string
	began := time.Now()
	for i := range 41 {
		t0 := time.Now()
		resp := post(t, url, legacyInit, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("client %d: initialize: %d, want a session", i+1, resp.StatusCode)
		}
		if i == 40 {
			t.Logf("client 41 served in %v (40 abandoned sessions took %v)", time.Since(t0).Round(time.Millisecond), t0.Sub(began).Round(time.Millisecond))
		}
		ids = append(ids, sid)
	}
	// The first 21 were evicted, least recently active first; the last 20 live.
	for i, sid := range ids {
		resp := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want := 200
		if i < 21 {
			want = 404
		}
		if resp.StatusCode != want {
			t.Errorf("session %d: ping %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// With the default flags, a server that needs 12 s to start serves a
// 2026-07-28 client within 17 s of the bridge's start: the request sent
// at once waits for it; /readyz says 503, then 200; the probe's verdict
// is logged and no probe process is logged as a child that exited.
func TestServeSlowChild(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a child 12 s slow to start; scripts/test.sh --quick leaves it to the full run")
	}
	addr := freePort(t)
	began := time.Now()
	p := startBridgeProc(t, "serve", "--listen", addr, "--", bin["memos"], "-start-delay", "12s")
	waitFor(t, "the bridge to listen", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while the child starts: %d, want 503", resp.StatusCode)
	}
	body, hdr := toolCall(1, "memo_list_memos", `{"pageSize":1}`)
	resp = post(t, "http://"+addr+"/mcp", body, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	t.Logf("first 2026-07-28 call answered %v after the bridge started (child start delay 12s)", took.Round(time.Millisecond))
	if resp.StatusCode != 200 || !strings.Contains(string(b), "memos/") {
		t.Fatalf("call: %d %s", resp.StatusCode, b)
	}
	if took > 17*time.Second {
		t.Errorf("answered %v after start, want within 17s", took)
	}
	waitReady(t, addr)
	logs := p.stderrString()
	if !strings.Contains(logs, `"decided_by":`) || strings.Contains(logs, `"message":"child exited"`) {
		t.Errorf("want the verdict with decided_by and no probe process as a child that exited:\n%s", logs)
	}
}
