package main

import (
	"io"
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
