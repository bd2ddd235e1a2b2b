//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 26 (2): two remote entries of one `serve --config` file, each a
// `serve --oauth-issuer` resource server behind the same node-oidc-provider,
// both with "oauth" settings: one browser run (one authorization request,
// carrying both resources) logs both in, then calls through both succeed.
// Each entry keeps its own record in the one token store, each with a
// refresh token (the shared one, after its rotation). Then both refresh
// in turn several times (35 s tokens, renewed 30 s before expiry): the
// provider rotates the shared refresh token and revokes the grant if a
// used one comes back, so this passes only if each rotation reaches the
// other entry — no second browser run, no error.
func TestOAuthConfigOneLoginForTwoRemotes(t *testing.T) {
	as := startOIDCProvider(t, 35*time.Second)
	urlA, urlB := serveWithIssuer(t, as), serveWithIssuer(t, as)
	h := newOAuthHome(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	cfg := fmt.Sprintf(`{"mcpServers": {
  "alpha": {"type": "http", "url": %q, "oauth": {"timeout": "60s"}},
  "beta": {"type": "http", "url": %q, "oauth": {"timeout": "60s"}}
}}`, urlA, urlB)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	front, addr := startDirectEnv(t, "mcp-bridge-serve-config",
		func(string) []string {
			return []string{"XDG_CONFIG_HOME=" + h.config, "MCP_INTEROP_BROWSER_LOG=" + h.browserLog, "BROWSER=" + env.oidcBrowser}
		},
		func(addr string) []string {
			return []string{env.bridge, "serve", "--config", file, "--listen", addr, "--log-level", "debug"}
		})
	var hosts []*stdioHost
	for _, name := range []string{"alpha", "beta"} {
		c := h.connectWith(t, "front-"+name, "http://"+addr+"/servers/"+name+"/mcp", env.oidcBrowser)
		if err := c.initialize(); err != nil {
			t.Fatalf("%s: %v\nfront log:\n%s\nprovider log:\n%s", name, err, tail(front.log(), 60), tail(as.p.log(), 30))
		}
		if err := c.listMemos(); err != nil {
			t.Fatalf("%s: %v\nfront log:\n%s", name, err, tail(front.log(), 60))
		}
		hosts = append(hosts, c)
	}
	s := as.stats(t)
	t.Logf("browser runs %d, registrations %d, authorizations %d, grants %v, errors %q", h.browserRuns(t), s.Registrations, s.Authorizations, s.Grants, s.Errors)
	if n := h.browserRuns(t); n != 1 || s.Authorizations != 1 || s.Grants["authorization_code"] != 1 {
		t.Fatalf("browser runs %d, authorizations %d, code grants %d; want one login for both\nfront log:\n%s", n, s.Authorizations, s.Grants["authorization_code"], tail(front.log(), 60))
	}
	if s.Registrations != 1 {
		t.Errorf("registrations %d, want 1 (one client for both)", s.Registrations)
	}
	files, _ := filepath.Glob(filepath.Join(h.config, "mcp-bridge", "oauth", "server-*.json"))
	refresh := map[string]bool{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if i := strings.Index(string(b), `"refresh_token": "`); i >= 0 {
			rest := string(b)[i+len(`"refresh_token": "`):]
			refresh[rest[:strings.IndexByte(rest, '"')]] = true
		}
	}
	if len(files) != 2 || len(refresh) != 1 {
		t.Errorf("%d records, %d distinct refresh tokens; want 2 records holding the one current refresh token", len(files), len(refresh))
	}

	// Refreshes in turn: each rotates the one refresh token.
	deadline := time.Now().Add(150 * time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for as.stats(t).Grants["refresh_token"] < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 refreshes within 150 s: %v\nfront log:\n%s", as.stats(t).Grants, tail(front.log(), 60))
		}
		for i, c := range hosts {
			if err := c.listMemos(); err != nil {
				t.Fatalf("host %d after %v: %v\nfront log:\n%s\nprovider log:\n%s", i, as.stats(t).Grants, err, tail(front.log(), 60), tail(as.p.log(), 30))
			}
		}
		<-tick.C // pacing the calls, not synchronization: the tokens' lifetime has to pass
	}
	s = as.stats(t)
	t.Logf("after the refreshes: browser runs %d, grants %v, errors %q", h.browserRuns(t), s.Grants, s.Errors)
	if n := h.browserRuns(t); n != 1 || s.Grants["authorization_code"] != 1 || len(s.Errors) != 0 {
		t.Fatalf("browser runs %d, code grants %d, provider errors %q after the refreshes; want 1, 1, none", n, s.Grants["authorization_code"], s.Errors)
	}
	for _, c := range hosts {
		if err := c.close(); err != nil {
			t.Error(err)
		}
	}
	checkLogClean(t, "mcp-bridge serve --config", front.log())
}

// Issue 26 (2), through `connect --config`: the same two remotes as one
// host entry. One browser run logs both in (the entries join one login:
// same authorization server, same registered client), and the host lists
// and calls each remote's tools under its prefix.
func TestOAuthConnectConfigOneLoginForTwoRemotes(t *testing.T) {
	as := startOIDCProvider(t, 10*time.Minute)
	urlA, urlB := serveWithIssuer(t, as), serveWithIssuer(t, as)
	h := newOAuthHome(t)
	file := filepath.Join(t.TempDir(), "remotes.json")
	// joinTimeout: the host's initialize waits for the login (an
	// automated browser run) instead of listing the remotes late.
	cfg := fmt.Sprintf(`{"mcpServers": {
  "alpha": {"type": "http", "url": %q, "oauth": {"timeout": "60s"}},
  "beta": {"type": "http", "url": %q, "oauth": {"timeout": "60s"}}
}, "mcpBridge": {"joinTimeout": "90s"}}`, urlA, urlB)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c := h.connectArgs(t, "config", []string{"BROWSER=" + env.oidcBrowser}, "connect", "--config", file, "--log-level", "debug")
	if err := c.initialize(); err != nil {
		t.Fatalf("%v\nprovider log:\n%s", err, tail(as.p.log(), 30))
	}
	r, err := c.call("tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha_memo_debug_stats", "beta_memo_debug_stats"} {
		if !strings.Contains(string(r), `"`+name+`"`) {
			t.Fatalf("tools/list lacks %s: %.400s\nlog:\n%s", name, r, c.tail())
		}
		res, err := c.call("tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		if err != nil || strings.Contains(string(res), `"isError":true`) {
			t.Fatalf("%s: %s %v", name, res, err)
		}
	}
	s := as.stats(t)
	t.Logf("browser runs %d, registrations %d, authorizations %d, grants %v", h.browserRuns(t), s.Registrations, s.Authorizations, s.Grants)
	if n := h.browserRuns(t); n != 1 || s.Authorizations != 1 || s.Grants["authorization_code"] != 1 {
		t.Fatalf("browser runs %d, authorizations %d, code grants %d; want one login for both\nlog:\n%s", n, s.Authorizations, s.Grants["authorization_code"], c.tail())
	}
	if err := c.close(); err != nil {
		t.Error(err)
	}
	b, _ := os.ReadFile(c.log)
	checkLogClean(t, "mcp-bridge connect --config", string(b))
}
