package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

func TestServeConfigUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"a": {"url": "https://h/mcp", "headers": {"X": "${MCP_BRIDGE_TEST_UNSET_VAR}"}}}}`), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--config", good, "--", "memos"}, exitUsage, "--config and -- COMMAND are exclusive"},
		{[]string{"serve", "--config", good, "--path", "/x"}, exitUsage, "--path does not apply with --config"},
		{[]string{"serve", "--config", good, "--sse-path", "/x/sse"}, exitUsage, "--sse-path can only be"},
		{[]string{"serve", "--config", bad}, exitFailure, "environment variable MCP_BRIDGE_TEST_UNSET_VAR is not set"},
		{[]string{"serve", "--config", filepath.Join(dir, "missing.json")}, exitFailure, "missing.json"},
		{[]string{"serve", "--config", good, "--listen", "0.0.0.0:0"}, exitUsage, "reachable from other machines"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// A limit given as a flag wins over the file's mcpBridge section, at start
// and after SIGHUP re-reads the file; without the flag the file's applies.
func TestServeConfigFlagsOverFile(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "servers.json")
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"maxBody": 100}}`, bin["memos"])
	if err := os.WriteFile(cfgFile, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	// 2 KiB of padding: over the file's 100 bytes, under the flag's 1 MiB.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", 2048) + `","version":"1"}}}`
	for _, tc := range []struct {
		flags []string
		want  int
	}{
		{nil, http.StatusRequestEntityTooLarge},
		{[]string{"--max-body", "1048576"}, http.StatusOK},
	} {
		addr := freePort(t)
		p := startBridgeProc(t, append([]string{"serve", "--listen", addr, "--config", cfgFile}, tc.flags...)...)
		waitReady(t, addr)
		resp := post(t, "http://"+addr+"/servers/memos/mcp", big, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("flags %v, file maxBody 100, a %d-byte initialize: %d, want %d", tc.flags, len(big), resp.StatusCode, tc.want)
		}
		p.cmd.Process.Kill()
		p.wait(t, 20*time.Second)
	}
}
