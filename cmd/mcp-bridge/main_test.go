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
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var bin = map[string]string{}

func TestMain(m *testing.M) {
	switch os.Getenv("MCP_BRIDGE_TEST_HELPER") {
	case "spawner":
		os.Exit(spawner(os.Args[1], os.Args[2]))
	case "sleeper":
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "cmd-test")
	if err != nil {
		panic(err)
	}
	for name, pkg := range map[string]string{"mcp-bridge": ".", "memos": "../../examples/memos", "hostilechild": "./testdata/hostilechild", "probe": "../../bridge/exec/testdata/probe", "taskchild": "../../bridge/internal/taskchild/cmd/taskserver"} {
		out := filepath.Join(dir, name)
		if runtime.GOOS == "windows" {
			out += ".exe"
		}
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
	mu     sync.Mutex // guards stderr while the process runs
}

// stderrString returns what the process wrote to stderr so far.
func (p *bridgeProc) stderrString() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func startBridgeProc(t *testing.T, args ...string) *bridgeProc {
	t.Helper()
	p := &bridgeProc{cmd: exec.Command(bin["mcp-bridge"], args...), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stderr = lockedWriter{&p.mu, p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("bridge stderr:\n%s", p.stderrString())
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
		{[]string{"serve", "--listen", "[::]:0", "--", "true"}, exitUsage, "reachable from other machines"},
		{[]string{"serve", "--session-mode", "weird", "--", "true"}, exitUsage, `--session-mode "weird": want auto, per-session or shared`},
		{[]string{"serve", "--child-protocol", "new", "--", "true"}, exitUsage, `--child-protocol "new": want auto, modern or legacy`},
		{[]string{"serve", "--child-per", "token", "--", "true"}, exitUsage, `--child-per "token": want shared or principal`},
		{[]string{"serve", "--auth-token", "tok-in-argv", "--", "true", "--key=tok-in-argv"}, exitFailure, "contains an --auth-token value"},
		{[]string{"serve", "--help"}, exitOK, "Usage: mcp-bridge serve"},
		{[]string{"serve", "--no-such-flag", "--", "true"}, exitUsage, "unknown flag"},
		{[]string{"serve", "--max-body", "lots", "--", "true"}, exitUsage, "invalid size"},
		{[]string{"serve", "--", "/nonexistent/server"}, exitFailure, "MCP server command"},
		{[]string{"serve", "--log-level", "loud", "--", "true"}, exitUsage, "--log-level"},
		{[]string{"exec"}, exitUsage, "--tools FILE is required"},
		{[]string{"exec", "--tools", "/nonexistent/tools.json"}, exitFailure, "tools file"},
		{[]string{"exec", "--tools", "x.json", "git", "log"}, exitUsage, "belong in the tools file"},
		{[]string{"exec", "--help"}, exitOK, "Usage: mcp-bridge exec"},
		{[]string{"exec", "--print-schema"}, exitOK, `"title": "mcp-bridge exec tools file"`},
		{[]string{"exe"}, exitUsage, `did you mean "exec"`},
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

// In connect mode stdout carries MCP messages only, whatever happens.
func TestConnectStdoutIsProtocolOnly(t *testing.T) {
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--", bin["memos"])
	waitReady(t, addr)
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--log-level", "debug", "http://"+addr+"/mcp")
	// Windows hosts may end lines with CRLF: accepted on input, while
	// stdout lines always end in a bare LF (Go writes no CRLF translation).
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`not json at all`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r",
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\r",
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":2}}}` + "\r",
		``,
	}, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if bytes.IndexByte(out, '\r') >= 0 {
		t.Errorf("CR on stdout: %q", out)
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

// spawner is a child MCP server with a grandchild: it starts a copy of the
// test binary that sleeps (helper "sleeper"), appends its pid to pidFile,
// then runs server on its own stdio. The test binary is portable where sh
// is not (the Windows twins use it).
func spawner(pidFile, server string) int {
	sleeper := exec.Command(os.Args[0], "-test.run=^$")
	sleeper.Env = append(os.Environ(), "MCP_BRIDGE_TEST_HELPER=sleeper")
	if err := sleeper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(pidFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(f, sleeper.Process.Pid)
	f.Close()
	srv := exec.Command(server)
	srv.Stdin, srv.Stdout, srv.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := srv.Run(); err != nil {
		return 1
	}
	return 0
}

func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		fmt.Sscan(f, &pid)
		pids = append(pids, pid)
	}
	return pids
}

// The version line names version, commit, Go version and platform, from
// the values release.sh stamps with -ldflags -X (release_test.sh checks a
// real stamped build).
func TestVersionString(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	want := "mcp-bridge v1.2.3 (commit 0123456789abcdef0123456789abcdef01234567, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got := versionString(); got != want {
		t.Errorf("versionString() = %q, want %q", got, want)
	}
	version, commit = "", ""
	if got := versionString(); !strings.HasPrefix(got, "mcp-bridge ") || !strings.Contains(got, "(commit ") {
		t.Errorf("unstamped versionString() = %q", got)
	}
}

// --auth-token is repeatable and MCP_BRIDGE_AUTH_TOKEN may list several
// tokens; each becomes its own principal.
func TestSplitTokens(t *testing.T) {
	got := splitTokens([]string{"a1, b2", "c3", ",,"})
	if strings.Join(got, "|") != "a1|b2|c3" {
		t.Fatalf("splitTokens = %q", got)
	}
}
