//go:build interop

package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tsOAuthServer starts the TypeScript SDK 1.32.2's example server
// (examples/server/simpleStreamableHttp.js --oauth --oauth-strict): an MCP
// server protected by the SDK's demo authorization server on a second
// port (mcpAuthRouter: metadata, dynamic registration, /authorize that
// approves at once and redirects, /token with PKCE, token introspection;
// --oauth-strict makes it accept only tokens issued for its own resource).
// Nobody here wrote it. It issues no refresh tokens.
func tsOAuthServer(t *testing.T) (mcpURL string) {
	t.Helper()
	script := filepath.Join(env.nodeModules, "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleStreamableHttp.js")
	authPort := freePort(t)
	p, addr := startDirectEnv(t, "ts-oauth-server",
		func(addr string) []string {
			return []string{"MCP_PORT=" + addr[strings.LastIndexByte(addr, ':')+1:], "MCP_AUTH_PORT=" + strconv.Itoa(authPort)}
		},
		func(string) []string { return []string{env.node, script, "--oauth", "--oauth-strict"} })
	if err := waitPort(p, fmt.Sprintf("127.0.0.1:%d", authPort)); err != nil {
		t.Fatalf("the demo authorization server: %v", err)
	}
	return "http://localhost:" + addr[strings.LastIndexByte(addr, ':')+1:] + "/mcp"
}

// oauthHome is a token store (XDG_CONFIG_HOME) and a browser log for one test.
type oauthHome struct {
	config, browserLog, art string
}

func newOAuthHome(t *testing.T) *oauthHome {
	d := t.TempDir()
	return &oauthHome{config: d, browserLog: filepath.Join(d, "browser.log"), art: artifactDir(t)}
}

func (h *oauthHome) env() []string {
	return append(os.Environ(), "XDG_CONFIG_HOME="+h.config, "MCP_INTEROP_BROWSER_LOG="+h.browserLog)
}

func (h *oauthHome) browserRuns(t *testing.T) int {
	b, err := os.ReadFile(h.browserLog)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// cli runs `mcp-bridge ARGS...` with the home's store and returns stdout.
func (h *oauthHome) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(env.bridge, args...)
	cmd.Env = h.env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-bridge %q: %v\n%s\n%s", args, err, out, stderr.String())
	}
	return string(out)
}

// stdioHost is a minimal 2025-11-25 stdio host of `mcp-bridge connect`.
type stdioHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	log    string
	nextID int
	waited bool
}

func (h *oauthHome) connect(t *testing.T, name, url string) *stdioHost {
	t.Helper()
	return h.connectWith(t, name, url, env.browser)
}

// connectWith is connect with another --oauth-browser command.
func (h *oauthHome) connectWith(t *testing.T, name, url, browser string) *stdioHost {
	t.Helper()
	return h.connectArgs(t, name, nil, "connect", "--log-level", "trace", "--oauth-browser", browser, "--oauth-timeout", "60s", url)
}

// connectArgs runs `mcp-bridge ARGS...` as a stdio host's server, with the
// home's store and extra environment.
func (h *oauthHome) connectArgs(t *testing.T, name string, extraEnv []string, args ...string) *stdioHost {
	t.Helper()
	log := filepath.Join(h.art, "connect-"+name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.bridge, args...)
	cmd.Env = append(h.env(), extraEnv...)
	cmd.Stderr = f
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := bufio.NewScanner(out)
	s.Buffer(nil, 1<<20)
	host := &stdioHost{cmd: cmd, in: in, out: s, log: log}
	t.Cleanup(func() {
		if !host.waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return host
}

// call sends a request and returns its result; a JSON-RPC error is an error.
func (s *stdioHost) call(method string, params any) (json.RawMessage, error) {
	s.nextID++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.nextID, "method": method, "params": params})
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for s.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(s.out.Bytes(), &m) != nil || m.ID == nil || *m.ID != s.nextID {
			continue // a notification or a server request
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: error %s\nlog:\n%s", method, m.Error, s.tail())
		}
		return m.Result, nil
	}
	return nil, fmt.Errorf("%s: connect's stdout ended\nlog:\n%s", method, s.tail())
}

func (s *stdioHost) tail() string {
	b, _ := os.ReadFile(s.log)
	return tail(string(b), 40)
}

// session runs initialize, tools/list and one tools/call, then closes
// stdin and expects exit status 0 within 30 s.
func (s *stdioHost) session(t *testing.T) {
	t.Helper()
	if err := s.run(); err != nil {
		t.Error(err)
	}
}

func (s *stdioHost) run() error {
	_, err := s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "oauth-interop", "version": "1"}})
	if err != nil {
		return err
	}
	if _, err := s.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		return err
	}
	if r, err := s.call("tools/list", map[string]any{}); err != nil || !strings.Contains(string(r), `"greet"`) {
		return fmt.Errorf("tools/list: %s %v", r, err)
	}
	if r, err := s.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "OAuth"}}); err != nil || !strings.Contains(string(r), "OAuth") {
		return fmt.Errorf("tools/call greet: %s %v", r, err)
	}
	s.in.Close()
	done := make(chan error, 1)
	s.waited = true
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("connect exited with %v\nlog:\n%s", err, s.tail())
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		return fmt.Errorf("connect did not exit within 30 s of stdin EOF")
	}
	return nil
}

// storedTokens reads the access tokens of the store, to grep logs for.
func (h *oauthHome) storedTokens(t *testing.T) (files []string, tokens []string) {
	t.Helper()
	files, _ = filepath.Glob(filepath.Join(h.config, "mcp-bridge", "oauth", "server-*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Grants []struct {
				Token struct {
					AccessToken  string `json:"access_token"`
					RefreshToken string `json:"refresh_token"`
				} `json:"token"`
			} `json:"grants"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		for _, g := range rec.Grants {
			for _, tok := range []string{g.Token.AccessToken, g.Token.RefreshToken} {
				if tok != "" {
					tokens = append(tokens, tok)
				}
			}
		}
	}
	return files, tokens
}

// (issue 9, end to end) connect against the TS SDK's demo authorization
// server: a browser login (the browser command), calls; the stored token
// reused by the next connect without a browser; auth status (no token
// value); 0600 files in a 0700 directory; no token in any trace log line;
// auth logout, after which connect logs in again.
func TestOAuthConnectTSDemoServer(t *testing.T) {
	url := tsOAuthServer(t)
	h := newOAuthHome(t)
	if out := h.cli(t, "auth", "status", url); !strings.Contains(out, "No stored logins") {
		t.Fatalf("auth status before login: %s", out)
	}

	t0 := time.Now()
	c1 := h.connect(t, "first", url)
	c1.session(t)
	t.Logf("first session with a browser login: %d ms", time.Since(t0).Milliseconds())
	if n := h.browserRuns(t); n != 1 {
		t.Fatalf("browser runs after the first connect = %d, want 1", n)
	}
	files, tokens := h.storedTokens(t)
	if len(files) != 1 || len(tokens) == 0 {
		t.Fatalf("store: files %v, %d tokens", files, len(tokens))
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: mode %v %v, want 0600", files[0], fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Dir(files[0])); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("token directory: mode %v %v, want 0700", fi.Mode().Perm(), err)
	}

	c2 := h.connect(t, "second", url)
	c2.session(t)
	if n := h.browserRuns(t); n != 1 {
		t.Fatalf("browser runs after the second connect = %d, want 1 (the stored token reused)", n)
	}

	status := h.cli(t, "auth", "status")
	for _, want := range []string{url, "issuer:", "(dynamic)", "mcp:tools", "expires:"} {
		if !strings.Contains(status, want) {
			t.Errorf("auth status lacks %q:\n%s", want, status)
		}
	}
	t.Logf("auth status:\n%s", status)
	for _, p := range []string{c1.log, c2.log} {
		b, _ := os.ReadFile(p)
		for _, tok := range tokens {
			if strings.Contains(string(b), tok) || strings.Contains(status, tok) {
				t.Errorf("BRIDGE BUG: a token value appears in %s or in auth status", p)
			}
		}
		checkLogClean(t, "mcp-bridge connect", string(b))
	}

	if out := h.cli(t, "auth", "logout", url); !strings.Contains(out, "Logged out") {
		t.Fatalf("auth logout: %s", out)
	}
	if files, _ := h.storedTokens(t); len(files) != 0 {
		t.Fatalf("files after logout: %v", files)
	}
	c3 := h.connect(t, "after-logout", url)
	c3.session(t)
	if n := h.browserRuns(t); n != 2 {
		t.Fatalf("browser runs after logout and connect = %d, want 2", n)
	}
}

// (issue 9) Two connect processes started together for one protected
// server and an empty store: one browser login, both sessions work.
func TestOAuthTwoConnectsOneLogin(t *testing.T) {
	url := tsOAuthServer(t)
	h := newOAuthHome(t)
	var wg sync.WaitGroup
	hosts := []*stdioHost{h.connect(t, "together-1", url), h.connect(t, "together-2", url)}
	for _, c := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.session(t)
		}()
	}
	wg.Wait()
	if n := h.browserRuns(t); n != 1 {
		t.Fatalf("browser runs = %d, want 1", n)
	}
	var waited bool
	for _, c := range hosts {
		b, _ := os.ReadFile(c.log)
		waited = waited || strings.Contains(string(b), "another mcp-bridge process")
	}
	if !waited {
		t.Errorf("neither connect reports reusing the other's token")
	}
}

// sdkRefreshServer starts drivers/oauth-refresh-server.mjs: the TS SDK's
// mcpAuthRouter and requireBearerAuth with its demo provider extended to
// issue (rotating) refresh tokens, since the demo provider itself issues
// none. It returns the MCP URL and a function that POSTs to /admin/PATH.
func sdkRefreshServer(t *testing.T) (mcpURL string, admin func(path string), p *proc) {
	t.Helper()
	authPort := freePort(t)
	p, addr := startDirectEnv(t, "oauth-refresh-server",
		func(addr string) []string {
			return []string{"MCP_PORT=" + addr[strings.LastIndexByte(addr, ':')+1:], "MCP_AUTH_PORT=" + strconv.Itoa(authPort)}
		},
		func(string) []string {
			return []string{env.node, filepath.Join(env.interopDir, "drivers", "oauth-refresh-server.mjs")}
		})
	if err := waitPort(p, fmt.Sprintf("127.0.0.1:%d", authPort)); err != nil {
		t.Fatalf("the authorization server: %v", err)
	}
	admin = func(path string) {
		resp, err := http.Post("http://"+addr+"/admin/"+path, "application/json", nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("admin %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	return "http://localhost:" + addr[strings.LastIndexByte(addr, ':')+1:] + "/mcp", admin, p
}

// (issue 9, end to end) Against the TS SDK's OAuth server pieces with
// refresh tokens: an access token the server no longer accepts is
// refreshed without a browser (the rotated refresh token stored and used
// the next time), and once the refresh token is revoked too, connect logs
// in through the browser again.
func TestOAuthRefreshSDKServer(t *testing.T) {
	url, admin, server := sdkRefreshServer(t)
	h := newOAuthHome(t)
	h.connect(t, "login", url).session(t)
	if n := h.browserRuns(t); n != 1 {
		t.Fatalf("browser runs after the first connect = %d, want 1", n)
	}
	_, first := h.storedTokens(t)

	admin("expire")
	h.connect(t, "refresh-1", url).session(t)
	admin("expire")
	h.connect(t, "refresh-2", url).session(t) // uses the rotated refresh token
	if n := h.browserRuns(t); n != 1 {
		t.Fatalf("browser runs after two expiries = %d, want 1 (refreshed)", n)
	}
	if n := strings.Count(server.log(), "refresh grant"); n != 2 {
		t.Errorf("refresh grants at the server = %d, want 2", n)
	}
	_, now := h.storedTokens(t)
	if len(first) < 2 || len(now) < 2 || first[1] == now[1] {
		t.Errorf("the stored refresh token was not rotated")
	}

	admin("revoke")
	h.connect(t, "relogin", url).session(t)
	if n := h.browserRuns(t); n != 2 {
		t.Fatalf("browser runs after revocation = %d, want 2", n)
	}
	if out := h.cli(t, "auth", "status", url); !strings.Contains(out, "refresh:  yes") {
		t.Errorf("auth status: %s", out)
	}
}
