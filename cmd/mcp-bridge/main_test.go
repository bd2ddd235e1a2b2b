package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var bin = map[string]string{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmd-test")
	if err != nil {
		panic(err)
	}
	for name, pkg := range map[string]string{"mcp-bridge": ".", "memos": "../../examples/memos"} {
		out := filepath.Join(dir, name)
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
		bin[name] = out
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Some tests call run in-process (usage, flags, serve startup).
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// bridgeProc is a running mcp-bridge process.
type bridgeProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startBridgeProc(t *testing.T, args ...string) *bridgeProc {
	t.Helper()
	p := &bridgeProc{cmd: exec.Command(bin["mcp-bridge"], args...), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("bridge stderr:\n%s", p.stderr)
		}
	})
	return p
}

func (p *bridgeProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("mcp-bridge did not exit within %v", d)
		return nil
	}
}

func waitReady(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
	t.Fatal("bridge never became ready")
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Usage:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"version"}, exitOK, "mcp-bridge "},
		{[]string{"serve"}, exitUsage, "missing the MCP server command"},
		{[]string{"serve", "--listen", "0.0.0.0:0", "--", "true"}, exitUsage, "set --auth-token"},
		{[]string{"serve", "--listen", ":0", "--", "true"}, exitUsage, "reachable from other machines"},
		{[]string{"serve", "--session-mode", "weird", "--", "true"}, exitUsage, `--session-mode "weird": want auto, per-session or shared`},
		{[]string{"serve", "--child-protocol", "new", "--", "true"}, exitUsage, `--child-protocol "new": want auto, modern or legacy`},
		{[]string{"serve", "--child-per", "token", "--", "true"}, exitUsage, `--child-per "token": want shared or principal`},
		{[]string{"serve", "--auth-token", "tok-in-argv", "--", "true", "--key=tok-in-argv"}, exitFailure, "contains an --auth-token value"},
		{[]string{"serve", "--help"}, exitOK, "Usage: mcp-bridge serve"},
		{[]string{"serve", "--no-such-flag", "--", "true"}, exitUsage, "unknown flag"},
		{[]string{"serve", "--max-body", "lots", "--", "true"}, exitUsage, "invalid size"},
		{[]string{"serve", "--", "/nonexistent/server"}, exitFailure, "MCP server command"},
		{[]string{"serve", "--log-level", "loud", "--", "true"}, exitUsage, "--log-level"},
		{[]string{"connect"}, exitUsage, "want exactly one URL"},
		{[]string{"connect", "ftp://example.com"}, exitUsage, "not an http(s) URL"},
		{[]string{"connect", "-H", "NoColon", "http://127.0.0.1:1/mcp"}, exitUsage, `want "Name: value"`},
		{[]string{"connect", "-H", "X-Key: ${MCP_BRIDGE_TEST_UNSET_VAR}", "http://127.0.0.1:1/mcp"}, exitUsage, "MCP_BRIDGE_TEST_UNSET_VAR is not set"},
		{[]string{"connect", "--protocol", "new", "http://127.0.0.1:1/mcp"}, exitUsage, `--protocol "new": want auto, modern or legacy`},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("mcp-bridge %q: exit %d, output %q; want exit %d and %q", tt.args, code, stdout+stderr, tt.code, tt.want)
		}
	}
}

func TestExpandHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "abc", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	h, err := parseHeaders([]string{"Authorization: Bearer ${TOKEN}", "X-Price: $$5 and $HOME", "X-Empty: ${EMPTY}"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer abc" || h.Get("X-Price") != "$5 and $HOME" || h.Get("X-Empty") != "" {
		t.Errorf("headers %v", h)
	}
	if _, err := parseHeaders([]string{"X: ${TOKEN"}, lookup); err == nil {
		t.Error("unterminated ${ accepted")
	}
}

func TestSafeURL(t *testing.T) {
	u, err := url.Parse("https://user:pw@example.com:8443/mcp/x?api_key=k1#token=k2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := safeURL(u), "https://example.com:8443/mcp/x"; got != want {
		t.Errorf("safeURL = %q, want %q", got, want)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "32MiB": 32 << 20, "512k": 512 << 10, "2MB": 2000000, "1G": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1.5M", "10XB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

// SIGTERM: in-flight requests finish, then every child and grandchild of
// the bridge is gone (supergateway PR#124: orphans by the thousand).
func TestServeSIGTERM(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	// The child starts a grandchild that ignores SIGTERM, then becomes memos.
	script := `trap '' TERM; sleep 300 & echo $! >> "$0"; trap - TERM; exec "$1" -step-delay 100ms`
	p := startBridgeProc(t, "serve", "--listen", addr, "--shutdown-timeout", "5s", "--", "sh", "-c", script, filepath.Join(dir, "pids"), bin["memos"])
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	// A legacy session gets a child (and grandchild) of its own.
	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	resp.Body.Close()
	if resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatal("no session")
	}
	// A call that takes ~500ms is in flight when SIGTERM arrives.
	result := make(chan string, 1)
	started := make(chan struct{})
	go func() {
		r := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":5},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "memo_export_memos"})
		defer r.Body.Close()
		br := bufio.NewReader(r.Body)
		first, _ := br.ReadString('\n') // the first progress event: the call is running
		close(started)
		rest, _ := io.ReadAll(br)
		result <- first + string(rest)
	}()
	// The two era-probe siblings (one of which stays on as the shared
	// child) and the session's child each started one.
	waitFor(t, "three grandchildren", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		return len(strings.Fields(string(b))) >= 3
	})
	<-started
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case r := <-result:
		if !strings.Contains(r, "exported") {
			t.Errorf("in-flight call after SIGTERM: %s, want its result", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight call never finished")
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pids"))
	for _, f := range strings.Fields(string(b)) {
		var pid int
		fmt.Sscan(f, &pid)
		waitFor(t, "grandchild "+f+" to be gone", func() bool { return !alive(pid) })
	}
}

// In connect mode stdout carries MCP messages only, whatever happens.
func TestConnectStdoutIsProtocolOnly(t *testing.T) {
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--", bin["memos"])
	waitReady(t, addr)
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--log-level", "debug", "http://"+addr+"/mcp")
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`not json at all`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":2}}}`,
		``,
	}, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	ids := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC message: %q", sc.Text())
			continue
		}
		id, _ := json.Marshal(m["id"])
		ids[string(id)] = true
	}
	for _, id := range []string{"1", "null", "2", "3"} {
		if !ids[id] {
			t.Errorf("no response with id %s on stdout:\n%s", id, out)
		}
	}
	if !strings.Contains(stderr.String(), `"level":"debug"`) {
		t.Error("logs did not go to stderr")
	}
}

func post(t *testing.T, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling other processes
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// --auth-token is repeatable and MCP_BRIDGE_AUTH_TOKEN may list several
// tokens; each becomes its own principal.
func TestSplitTokens(t *testing.T) {
	got := splitTokens([]string{"a1, b2", "c3", ",,"})
	if strings.Join(got, "|") != "a1|b2|c3" {
		t.Fatalf("splitTokens = %q", got)
	}
}
