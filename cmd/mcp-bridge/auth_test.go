package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

// useConfigDir points os.UserConfigDir at a temporary directory.
func useConfigDir(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("os.UserConfigDir is redirected with XDG_CONFIG_HOME on Linux only")
	}
	d := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", d)
	return d
}

// auth status shows server, issuer, client, scopes and expiry, never a
// token; auth logout forgets the server.
func TestAuthStatusLogout(t *testing.T) {
	useConfigDir(t)
	store, err := oauth.DefaultStore()
	if err != nil {
		t.Fatal(err)
	}
	const server = "https://mcp.example.com/mcp"
	rec := &oauth.Record{Server: server, Grants: []oauth.Grant{{
		Issuer: "https://as.example.com",
		Client: oauth.Client{ID: "client-1", Secret: "SECRET-client", Source: "dynamic"},
		Token: oauth.Token{AccessToken: "SECRET-access", RefreshToken: "SECRET-refresh",
			Expiry: time.Now().Add(time.Hour), Scopes: []string{"read", "write"}},
	}}}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("auth", "status")
	if code != 0 || !strings.Contains(out, server) || !strings.Contains(out, "https://as.example.com") ||
		!strings.Contains(out, "read write") || !strings.Contains(out, "client-1 (dynamic)") || !strings.Contains(out, "refresh:  yes") {
		t.Fatalf("auth status: %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, "SECRET") {
		t.Fatalf("auth status printed a secret:\n%s", out)
	}
	if code, out, _ := runCLI("auth", "status", "HTTPS://MCP.example.com/mcp/"); code != 0 || !strings.Contains(out, "client-1") {
		t.Fatalf("auth status URL (canonicalised): %d %s", code, out)
	}
	if code, out, _ := runCLI("auth", "logout", server); code != 0 || !strings.Contains(out, "Logged out") {
		t.Fatalf("auth logout: %d %s", code, out)
	}
	if m, _ := filepath.Glob(filepath.Join(store.Dir, "server-*.json")); len(m) != 0 {
		t.Fatalf("files left after logout: %v", m)
	}
	if code, out, _ := runCLI("auth", "status"); code != 0 || !strings.Contains(out, "No stored logins") {
		t.Fatalf("auth status after logout: %d %s", code, out)
	}
}

func TestAuthUsage(t *testing.T) {
	for _, args := range [][]string{
		{"auth"}, {"auth", "nope"}, {"auth", "logout"}, {"auth", "login", "ftp://x"},
		{"auth", "login", "--oauth-grant", "password", "https://x.example/mcp"},
		{"auth", "login", "--oauth-grant", "client_credentials", "https://x.example/mcp"},
		{"connect", "--oauth-client-secret", "s", "https://x.example/mcp"},
		{"connect", "--oauth-client-metadata-url", "http://insecure.example/c.json", "https://x.example/mcp"},
	} {
		useConfigDir(t)
		if code, _, errs := runCLI(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, exitUsage, errs)
		}
	}
}

// A static Authorization (--bearer-token or -H) turns OAuth off: the 401
// goes to the host as a JSON-RPC error and no metadata is fetched. Without
// one, the same 401 starts discovery.
func TestStaticAuthorizationTurnsOAuthOff(t *testing.T) {
	useConfigDir(t)
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/prm"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	connect := func(extra ...string) string {
		var out, errb bytes.Buffer
		args := append([]string{"connect", "--protocol", "legacy", "--oauth-browser", "false", "--oauth-timeout", "5s"}, extra...)
		run(context.Background(), append(args, srv.URL+"/mcp"), strings.NewReader(init), &out, &errb)
		return out.String()
	}
	for _, flags := range [][]string{{"--bearer-token", "static"}, {"-H", "Authorization: Bearer static"}} {
		mu.Lock()
		paths = nil
		mu.Unlock()
		out := connect(flags...)
		if !strings.Contains(out, `"error"`) || !strings.Contains(out, "401") {
			t.Errorf("%v: stdout %s, want a JSON-RPC error about the 401", flags, out)
		}
		mu.Lock()
		if slices.Contains(paths, "/prm") {
			t.Errorf("%v: the resource metadata was fetched: OAuth is not off", flags)
		}
		mu.Unlock()
	}
	mu.Lock()
	paths = nil
	mu.Unlock()
	out := connect()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(paths, "/prm") || !strings.Contains(out, "login") {
		t.Errorf("without a static credential: paths %v, stdout %s", paths, out)
	}
}
