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

// serve --config with --auth-token-file: every server takes the file's
// tokens, and SIGHUP re-reads the file for all of them (alongside the
// config file) — a removed token is refused at once, an added one admitted.
func TestServeConfigTokenFileSIGHUP(t *testing.T) {
	dir := t.TempDir()
	cfgFile, tokFile := filepath.Join(dir, "servers.json"), filepath.Join(dir, "tokens")
	cfg := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "memos2": {"command": %q}}}`, bin["memos"], bin["memos"])
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	writeTokens := func(s string) {
		if err := os.WriteFile(tokFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeTokens("alice:alice-token-0123456789\n")
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile, "--auth-token-file", tokFile, "--log-level", "info")
	waitReady(t, addr)
	base := "http://" + addr
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	status := func(server, token string) int {
		resp := post(t, base+"/servers/"+server+"/mcp", initialize, map[string]string{"Authorization": "Bearer " + token})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, s := range []string{"memos", "memos2"} {
		if c := status(s, "alice-token-0123456789"); c != 200 {
			t.Fatalf("alice at %s: %d", s, c)
		}
		if c := status(s, "bob-token-0123456789"); c != 401 {
			t.Fatalf("bob before the reload at %s: %d, want 401", s, c)
		}
	}
	if !strings.Contains(p.stderrString(), `"principal":"alice"`) {
		t.Error("the access log does not name alice")
	}

	writeTokens("bob:bob-token-0123456789\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the token file to be re-read", func() bool {
		return strings.Contains(p.stderrString(), "SIGHUP: token file re-read")
	})
	for _, s := range []string{"memos", "memos2"} {
		if c := status(s, "bob-token-0123456789"); c != 200 {
			t.Errorf("bob after the reload at %s: %d", s, c)
		}
		if c := status(s, "alice-token-0123456789"); c != 401 {
			t.Errorf("alice after the reload at %s: %d, want 401", s, c)
		}
	}
	if strings.Contains(p.stderrString(), "token-0123456789") {
		t.Error("a token appears in the log")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// SIGHUP re-reads the file, and a limit given as a flag still wins over
// the file's new value (the reload restarts the server with its limits).
func TestServeConfigFlagsOverFileSIGHUP(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "servers.json")
	write := func(maxBody int) {
		file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"maxBody": %d}}`, bin["memos"], maxBody)
		if err := os.WriteFile(cfgFile, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", 2048) + `","version":"1"}}}`
	status := func(url string) int {
		resp := post(t, url, big, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	write(100)
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile, "--max-body", "1048576", "--log-level", "info")
	waitReady(t, addr)
	url := "http://" + addr + "/servers/memos/mcp"
	if code := status(url); code != http.StatusOK {
		t.Fatalf("before SIGHUP: %d, want 200 (--max-body over the file's 100)", code)
	}
	write(200)
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the reload to be logged", func() bool {
		return strings.Contains(p.stderrString(), "SIGHUP: configuration reloaded")
	})
	waitFor(t, "memos to be ready again", func() bool {
		resp, err := http.Get("http://" + addr + "/servers/memos/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if code := status(url); code != http.StatusOK {
		t.Errorf("after SIGHUP with the file's maxBody 200: %d, want 200 (--max-body still wins)", code)
	}
}
