//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// initSession opens a 2025 session at url and returns its id.
func initSession(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize at %s: %d, session %q", url, resp.StatusCode, sid)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr).Body.Close()
	return sid
}

// sessionCall calls memos' auth_get_current_user in session sid.
func sessionCall(t *testing.T, url, sid string) (int, string) {
	t.Helper()
	resp := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"auth_get_current_user","arguments":{}}}`,
		map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve --config through the real binary: SIGHUP after adding a server
// serves it while an open 2025 session on another server goes on; a
// broken file on SIGHUP keeps the running configuration.
func TestServeConfigSIGHUP(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "servers.json")
	write := func(s string) {
		if err := os.WriteFile(cfgFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "off": {"command": "nope", "disabled": true}}}`, bin["memos"])
	two := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "memos2": {"command": %q}}}`, bin["memos"], bin["memos"])
	write(one)
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile, "--log-level", "info")
	waitReady(t, addr)
	base := "http://" + addr
	sid := initSession(t, base+"/servers/memos/mcp")
	if code, body := sessionCall(t, base+"/servers/memos/mcp", sid); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("call before reload: %d %s", code, body)
	}
	resp, err := http.Get(base + "/servers/off/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("disabled server: %d", resp.StatusCode)
	}

	write(two)
	hup := time.Now()
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "memos2 to be served", func() bool {
		resp, err := http.Get(base + "/servers/memos2/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	t.Logf("the added server was ready %v after SIGHUP", time.Since(hup).Round(time.Millisecond))
	sid2 := initSession(t, base+"/servers/memos2/mcp")
	if code, body := sessionCall(t, base+"/servers/memos2/mcp", sid2); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("added server: %d %s", code, body)
	}
	if code, body := sessionCall(t, base+"/servers/memos/mcp", sid); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("the open session after SIGHUP: %d %s", code, body)
	}

	write(`{"mcpServers": {`)
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the reload error to be logged", func() bool {
		return strings.Contains(p.stderrString(), "configuration not reloaded")
	})
	if code, body := sessionCall(t, base+"/servers/memos2/mcp", sid2); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("after a broken file: %d %s", code, body)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}
