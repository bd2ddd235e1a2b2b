package main

import (
	"path/filepath"
	"runtime"
	"strings"
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
