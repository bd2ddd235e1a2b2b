package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

// TestConnectRedirectKeepsCredentials: a remote that redirects to another
// origin (301, 302, 307, 308; another port of the same host), or from
// https to http, gets no request of connect's followed there — with an
// OAuth token (stored from an earlier login), with --bearer-token and
// with -H: the target receives no request at all, so neither the
// credential nor the MCP message, and the host gets a JSON-RPC error
// naming the redirect (issue 28).
func TestConnectRedirectKeepsCredentials(t *testing.T) {
	useConfigDir(t)
	var reached, credentialed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			credentialed.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer target.Close()
	redirect := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/mcp", status)
		}
	}
	type remote struct {
		name, url string
		tls       bool
	}
	var remotes []remote
	for _, status := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(redirect(status))
		defer srv.Close()
		remotes = append(remotes, remote{http.StatusText(status), srv.URL + "/mcp", false})
	}
	tlsSrv := httptest.NewTLSServer(redirect(http.StatusTemporaryRedirect))
	defer tlsSrv.Close()
	remotes = append(remotes, remote{"https to http", tlsSrv.URL + "/mcp", true})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	store, err := oauth.DefaultStore()
	if err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	for _, rm := range remotes {
		// A login made earlier: connect sends its access token at once.
		server, err := oauth.CanonicalResource(rm.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Save(&oauth.Record{Server: server, Grants: []oauth.Grant{{
			Issuer: "https://as.example.com", Client: oauth.Client{ID: "c1", Source: "dynamic"},
			Token: oauth.Token{AccessToken: "oauth-access-secret", Expiry: time.Now().Add(time.Hour)},
		}}}); err != nil {
			t.Fatal(err)
		}
		for _, cred := range []struct {
			name  string
			flags []string
		}{
			{"oauth", nil},
			{"bearer", []string{"--bearer-token", "static-bearer-secret"}},
			{"header", []string{"-H", "X-Api-Key: header-secret"}},
		} {
			t.Run(rm.name+"/"+cred.name, func(t *testing.T) {
				args := []string{"connect", "--protocol", "legacy", "--oauth-browser", "false", "--oauth-timeout", "5s", "--retries", "0"}
				if rm.tls {
					args = append(args, "--ca-file", caFile)
				}
				args = append(append(args, cred.flags...), rm.url)
				var out, errb bytes.Buffer
				run(context.Background(), args, strings.NewReader(init), &out, &errb)
				if !strings.Contains(out.String(), `"error"`) || !strings.Contains(out.String(), "not followed") ||
					!strings.Contains(out.String(), target.URL+"/mcp") {
					t.Errorf("stdout %s, want a JSON-RPC error naming the refused redirect\nstderr %s", out.String(), errb.String())
				}
				for _, s := range []string{"oauth-access-secret", "static-bearer-secret", "header-secret"} {
					if strings.Contains(out.String()+errb.String(), s) {
						t.Errorf("%q in the output", s)
					}
				}
			})
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests, %d with credentials", n, credentialed.Load())
	}
}
