package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

// Issue 26: auth status --config lists every enabled entry of the file and
// its login state from the one token store — logged in (issuer, client,
// expiry, refresh), not logged in, no OAuth — and never a token, a secret
// or a URL's query.
func TestAuthStatusConfig(t *testing.T) {
	useConfigDir(t)
	store, err := oauth.DefaultStore()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(&oauth.Record{Server: "https://a.example/mcp", Grants: []oauth.Grant{{
		Issuer: "https://as.example",
		Client: oauth.Client{ID: "shared-client", Secret: "SECRET-client", Source: "dynamic"},
		Token:  oauth.Token{AccessToken: "SECRET-access", RefreshToken: "SECRET-refresh", Expiry: time.Now().Add(time.Hour), Scopes: []string{"mcp"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CFG_TEST_SECRET", "SECRET-env")
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {
	  "alpha": {"url": "https://a.example/mcp", "oauth": {}},
	  "beta": {"url": "https://b.example/mcp?key=SECRET-query", "oauth": {"grant": "device_code", "clientId": "c2", "clientSecret": "${CFG_TEST_SECRET}"}},
	  "gamma": {"url": "https://c.example/mcp", "headers": {"Authorization": "Bearer ${CFG_TEST_SECRET}"}},
	  "local": {"command": "memos"},
	  "off": {"url": "https://off.example/mcp", "disabled": true}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("auth", "status", "--config", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"alpha: https://a.example/mcp, OAuth authorization_code: logged in\n  issuer:   https://as.example\n  client:   shared-client (dynamic)",
		"refresh:  yes",
		"beta: https://b.example/mcp, OAuth device_code: not logged in\n",
		"gamma: https://c.example/mcp, no OAuth",
		"local: stdio command, no OAuth",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errs, "SECRET") || strings.Contains(out, "off") {
		t.Errorf("output shows a secret or a disabled entry:\n%s", out)
	}
	if code, _, _ := runCLI("auth", "status", "--config", file, "https://a.example/mcp"); code != exitUsage {
		t.Errorf("--config with a URL: exit %d, want %d", code, exitUsage)
	}
	if code, _, errs := runCLI("auth", "status", "--config", filepath.Join(t.TempDir(), "none.json")); code == 0 || !strings.Contains(errs, "none.json") {
		t.Errorf("a missing file: exit %d, %s", code, errs)
	}
}
