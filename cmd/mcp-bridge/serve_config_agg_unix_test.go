//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve --config through the real binary: a SIGHUP that adds a server
// keeps an open 2025 session of the aggregated /mcp, which then calls the
// new server's tool (before: "session ended: mcp-bridge is shutting
// down", then 404).
func TestServeConfigSIGHUPKeepsAggregateSession(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "servers.json")
	write := func(s string) {
		if err := os.WriteFile(cfgFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bin["memos"])
	two := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "memos2": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bin["memos"], bin["memos"])
	write(one)
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile, "--log-level", "info")
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	sid := initSession(t, url)
	call := func(tool string) (int, string) {
		resp := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`,
			map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("memos_auth_get_current_user"); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("call before reload: %d %s", code, body)
	}
	write(two)
	hup := time.Now()
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "memos2 to join the aggregate session", func() bool {
		code, body := call("memos2_auth_get_current_user")
		if code == 404 {
			t.Fatalf("the aggregate session ended at the reload: %d %s", code, body)
		}
		return code == 200 && strings.Contains(body, "users/1")
	})
	t.Logf("memos2 callable in the open aggregate session %v after SIGHUP", time.Since(hup).Round(time.Millisecond))
	if code, body := call("memos_auth_get_current_user"); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("memos in the open session after SIGHUP: %d %s", code, body)
	}
	if strings.Contains(p.stderrString(), "shutting down") {
		t.Error("the reload shut something down")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}
