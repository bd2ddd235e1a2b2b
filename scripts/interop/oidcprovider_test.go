//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// oidcProvider is drivers/oidc-provider.mjs: node-oidc-provider 9.13.3 with
// dynamic registration, PKCE, resource indicators (JWT access tokens for
// the resource) and rotated refresh tokens, on 127.0.0.1.
type oidcProvider struct {
	issuer string
	p      *proc
}

// providerStats is the driver's GET /test/stats.
type providerStats struct {
	Registrations  int            `json:"registrations"`
	Scopes         []string       `json:"registeredScopes"`
	Authorizations int            `json:"authorizations"`
	Grants         map[string]int `json:"grants"`
	Errors         []string       `json:"errors"`
}

func startOIDCProvider(t *testing.T, accessTTL time.Duration, extraEnv ...string) *oidcProvider {
	t.Helper()
	p, addr := startDirectEnv(t, "oidc-provider",
		func(addr string) []string {
			return append([]string{"PORT=" + addr[strings.LastIndexByte(addr, ':')+1:], fmt.Sprintf("ACCESS_TOKEN_TTL=%d", int(accessTTL.Seconds()))}, extraEnv...)
		},
		func(string) []string {
			return []string{env.node, filepath.Join(env.interopDir, "drivers", "oidc-provider.mjs")}
		})
	return &oidcProvider{issuer: "http://" + addr, p: p}
}

func (o *oidcProvider) stats(t *testing.T) providerStats {
	t.Helper()
	resp, err := http.Get(o.issuer + "/test/stats")
	if err != nil {
		t.Fatalf("provider stats: %v", err)
	}
	defer resp.Body.Close()
	var s providerStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("provider stats: %v", err)
	}
	return s
}

// forget makes the provider forget every registered client, as a reset of
// its database would.
func (o *oidcProvider) forget(t *testing.T) {
	t.Helper()
	resp, err := http.Post(o.issuer+"/test/forget", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("provider forget: %v %v", resp, err)
	}
	resp.Body.Close()
}

// serveWithIssuer starts `mcp-bridge serve --oauth-issuer` for as in
// front of memos and returns its MCP URL.
func serveWithIssuer(t *testing.T, as *oidcProvider) string {
	t.Helper()
	_, addr := startDirect(t, "mcp-bridge-serve", func(addr string) []string {
		return []string{env.bridge, "serve", "--listen", addr, "--log-level", "debug", "--public-url", "http://" + addr + "/mcp",
			"--oauth-issuer", as.issuer, "--oauth-scope", "mcp:memos", "--", env.memos}
	})
	return "http://" + addr + "/mcp"
}

// initialize opens the MCP session of a connect host.
func (s *stdioHost) initialize() error {
	if _, err := s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "oauth-interop", "version": "1"}}); err != nil {
		return err
	}
	_, err := s.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	return err
}

// listMemos calls tools/list and checks that memos' tools are there.
func (s *stdioHost) listMemos() error {
	r, err := s.call("tools/list", map[string]any{})
	if err == nil && !strings.Contains(string(r), "memo_export_memos") {
		err = fmt.Errorf("tools/list without memos' tools: %.300s", r)
	}
	return err
}

// close ends the session (stdin EOF) and expects exit 0 within 30 s.
func (s *stdioHost) close() error {
	s.in.Close()
	done := make(chan error, 1)
	s.waited = true
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("connect exited with %v\nlog:\n%s", err, s.tail())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		return fmt.Errorf("connect did not exit within 30 s of stdin EOF")
	}
}

// storedRefresh reports whether the store holds a refresh token.
func (h *oauthHome) storedRefresh(t *testing.T) bool {
	files, _ := filepath.Glob(filepath.Join(h.config, "mcp-bridge", "oauth", "server-*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"refresh_token": "`) {
			return true
		}
	}
	return false
}

// Issue 28 (6): node-oidc-provider 9.13.3 as the authorization server of
// `serve --oauth-issuer` in front of examples/memos, connect as the client,
// the provider's own login and consent pages filled in by a scripted
// browser. Two connects started together share one login (the store's
// lock); the login yields a refresh token (offline_access kept because
// connect sends prompt=consent; the registration named its scope, which
// the provider then holds the client to); after the short access-token
// lifetime the token is refreshed without a browser; after the provider
// forgot its clients, exactly one new registration and one login.
func TestOAuthNodeOIDCProvider(t *testing.T) {
	// 45 s: connect renews a token 30 s before its expiry, so each token
	// is used for about 15 s and then refreshed.
	as := startOIDCProvider(t, 45*time.Second)
	url := serveWithIssuer(t, as)
	h := newOAuthHome(t)
	report := func(when string) providerStats {
		s := as.stats(t)
		t.Logf("%s: browser runs %d, registrations %d, authorizations %d, grants %v", when, h.browserRuns(t), s.Registrations, s.Authorizations, s.Grants)
		return s
	}

	hosts := []*stdioHost{h.connectWith(t, "a", url, env.oidcBrowser), h.connectWith(t, "b", url, env.oidcBrowser)}
	var wg sync.WaitGroup
	for _, c := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.initialize(); err != nil {
				t.Error(err)
				return
			}
			if err := c.listMemos(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.Fatalf("provider log:\n%s", tail(as.p.log(), 40))
	}
	s := report("two connects started together")
	if n := h.browserRuns(t); n != 1 || s.Registrations != 1 {
		t.Fatalf("browser runs %d, registrations %d, want 1 and 1", n, s.Registrations)
	}
	if len(s.Scopes) != 1 || s.Scopes[0] != "mcp:memos offline_access" {
		t.Errorf("registered scopes %q, want the one requested", s.Scopes)
	}
	if !h.storedRefresh(t) {
		t.Fatalf("no refresh token stored (was offline_access dropped?)\nprovider log:\n%s", tail(as.p.log(), 40))
	}
	for _, c := range hosts {
		b, _ := os.ReadFile(c.log)
		if strings.Contains(string(b), "another mcp-bridge process") {
			t.Logf("connect %s reused the other's login", filepath.Base(c.log))
		}
	}

	// Calls until the access token is past its (connect-side) expiry and
	// refreshed: no browser.
	waitFor := func(what string, done func(providerStats) bool) {
		t.Helper()
		deadline := time.Now().Add(120 * time.Second)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for !done(as.stats(t)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 120 s\nprovider log:\n%s", what, tail(as.p.log(), 40))
			}
			if err := hosts[0].listMemos(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			<-tick.C // pacing the calls, not synchronization: the token's lifetime has to pass
		}
	}
	waitFor("a refresh", func(s providerStats) bool { return s.Grants["refresh_token"] >= 1 })
	if err := hosts[1].listMemos(); err != nil {
		t.Fatal(err)
	}
	s = report("after expiry")
	if n := h.browserRuns(t); n != 1 || s.Registrations != 1 {
		t.Fatalf("browser runs %d, registrations %d after the refresh, want 1 and 1", n, s.Registrations)
	}

	// The provider forgets its clients: at the next renewal connect meets
	// invalid_client, registers once more and logs in once.
	as.forget(t)
	waitFor("a new registration", func(s providerStats) bool { return s.Registrations >= 2 })
	for _, c := range hosts {
		if err := c.listMemos(); err != nil {
			t.Fatal(err)
		}
	}
	s = report("after the provider forgot its clients")
	if n := h.browserRuns(t); n != 2 || s.Registrations != 2 || s.Grants["authorization_code"] != 2 {
		t.Fatalf("browser runs %d, registrations %d, code grants %d; want 2, 2, 2", n, s.Registrations, s.Grants["authorization_code"])
	}
	for _, c := range hosts {
		if err := c.close(); err != nil {
			t.Error(err)
		}
		b, _ := os.ReadFile(c.log)
		checkLogClean(t, "mcp-bridge connect", string(b))
	}
}

// Issue 28 (6): connect without a token against a static-token serve
// reports serve's own words ("this server takes a static bearer token"),
// not a registration 404, and opens no browser.
func TestOAuthStaticTokenServeHint(t *testing.T) {
	b := startBridge(t, serveOpts{Child: []string{env.memos}, Env: []string{"MCP_BRIDGE_AUTH_TOKEN=tok-static-28"}})
	defer b.shutdown(t)
	h := newOAuthHome(t)
	c := h.connect(t, "static", b.URL)
	err := c.initialize()
	if err == nil || !strings.Contains(err.Error(), "this server takes a static bearer token") || strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("initialize: %v", err)
	}
	if n := h.browserRuns(t); n != 0 {
		t.Errorf("browser runs = %d, want 0", n)
	}
}

// Issue 28 (6): a resource server that refuses every token, even the one a
// login just gave (here: node-oidc-provider issues them for another
// audience; no refresh tokens): each connect process runs the browser at
// most once in 5 minutes; the host's later requests fail at once with an
// error that says so, instead of one browser login per request. Before the
// third process the provider forgets its clients: with no refresh token to
// reveal it, connect checks the stored registration at the token endpoint
// before opening the browser, registers once more and logs in once.
func TestOAuthRefusedFreshTokens(t *testing.T) {
	as := startOIDCProvider(t, 300*time.Second, "WRONG_AUDIENCE=1", "NO_REFRESH=1")
	url := serveWithIssuer(t, as)
	h := newOAuthHome(t)
	const messages = 7
	for i, name := range []string{"p1", "p2", "p3"} {
		wantRegistrations := 1
		if name == "p3" {
			as.forget(t)
			wantRegistrations = 2
		}
		c := h.connectWith(t, name, url, env.oidcBrowser)
		var last error
		for m := range messages {
			var err error
			if m == 0 {
				err = c.initialize()
			} else {
				_, err = c.call("ping", map[string]any{})
			}
			if err == nil {
				t.Fatalf("%s message %d: accepted", name, m)
			}
			last = err
		}
		if !strings.Contains(last.Error(), "refused the token of the browser login") || !strings.Contains(last.Error(), "not issued for this resource") {
			t.Errorf("%s: last error %v", name, last)
		}
		if err := c.close(); err != nil {
			t.Error(err)
		}
		s := as.stats(t)
		t.Logf("%s: %d messages, browser runs %d, registrations %d, code grants %d", name, messages, h.browserRuns(t), s.Registrations, s.Grants["authorization_code"])
		if n := h.browserRuns(t); n != i+1 {
			t.Fatalf("browser runs after connect process %d = %d, want %d", i+1, n, i+1)
		}
		if s.Registrations != wantRegistrations {
			t.Errorf("registrations = %d after %s, want %d (a stored registration is reused until the provider forgot it)", s.Registrations, name, wantRegistrations)
		}
	}
}
