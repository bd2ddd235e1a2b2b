package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The secrets a remote entry of the fixture is configured with: in the
// URL's user info and query, and in its headers.
const (
	secretPassword = "url-pass-5e1b"
	secretQuery    = "query-key-0c9d"
	secretHeader   = "header-key-77aa"
	secretToken    = "bearer-tok-31f4"
)

var secrets = []string{secretPassword, secretQuery, secretHeader, secretToken}

// countingTarget counts what a redirect target receives.
type countingTarget struct {
	requests, credentialed atomic.Int32
	url                    string
}

func newCountingTarget(t *testing.T) *countingTarget {
	ct := &countingTarget{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct.requests.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" || r.URL.User != nil {
			ct.credentialed.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	ct.url = srv.URL
	return ct
}

// echoAll answers status with a body (and WWW-Authenticate) repeating
// everything the request carried, as a careless server's error page does.
func echoAll(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		echo := fmt.Sprintf("url=%s auth=%s key=%s", r.URL.String(), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+r.Header.Get("Authorization")+`"`)
		}
		http.Error(w, "internal detail: "+echo, status)
	}
}

func redirectTo(status int, target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+"/mcp", status)
	}
}

// remoteEntry is one remote entry of the fixture, with a password, a
// query secret and two secret headers.
func remoteEntry(name, base string) string {
	u := strings.Replace(base, "://", "://svc:"+secretPassword+"@", 1) + "/mcp?api_key=" + secretQuery
	return fmt.Sprintf(`%q: {"type": "http", "url": %q, "headers": {"Authorization": "Bearer %s", "X-Api-Key": %q}}`,
		name, u, secretToken, secretHeader)
}

// TestRemoteEntrySecretsStayHome: remote entries configured with a URL
// password, a query secret and secret headers fail in every way a remote
// can — nothing listening, 500 with a body echoing the request, 401 with
// an echoing challenge, redirects to another origin (301/302/307/308) and
// from https to http — and no JSON-RPC answer a gateway client gets
// contains any of the secrets or the remote's error body; the redirect
// targets receive no request at all.
func TestRemoteEntrySecretsStayHome(t *testing.T) {
	target := newCountingTarget(t)
	start := func(h http.Handler) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tlsRemote := httptest.NewTLSServer(redirectTo(http.StatusTemporaryRedirect, target.url))
	t.Cleanup(tlsRemote.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now

	remotes := map[string]string{
		"refused":   refused,
		"status500": start(echoAll(http.StatusInternalServerError)),
		"unauth":    start(echoAll(http.StatusUnauthorized)),
		"r301":      start(redirectTo(http.StatusMovedPermanently, target.url)),
		"r302":      start(redirectTo(http.StatusFound, target.url)),
		"r307":      start(redirectTo(http.StatusTemporaryRedirect, target.url)),
		"r308":      start(redirectTo(http.StatusPermanentRedirect, target.url)),
		"downgrade": tlsRemote.URL,
	}
	var entries []string
	for name, base := range remotes {
		entries = append(entries, remoteEntry(name, base))
	}
	file := `{"mcpServers": {` + strings.Join(entries, ",\n") + `}}`
	hc := tlsRemote.Client() // trusts the https remote; plain http too
	t.Cleanup(hc.CloseIdleConnections)
	gw := startGatewayCfg(t, file, Config{HTTPClient: hc})

	requests := []struct {
		name, body string
		hdr        map[string]string
	}{
		{"legacy initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil},
		{"modern tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}},
	}
	for name := range remotes {
		for _, rq := range requests {
			t.Run(name+"/"+rq.name, func(t *testing.T) {
				status, body := gwPost(t, gw.URL+Path(name), rq.body, rq.hdr)
				t.Logf("%d %s", status, body)
				if !strings.Contains(body, `"error"`) {
					t.Errorf("no JSON-RPC error: %d %s", status, body)
				}
				for _, s := range secrets {
					if strings.Contains(body, s) {
						t.Errorf("the answer contains the configured secret %q: %s", s, body)
					}
				}
				if strings.Contains(body, "internal detail") {
					t.Errorf("the answer carries the remote's error body: %s", body)
				}
			})
		}
	}
	if n := target.requests.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests, %d with credentials", n, target.credentialed.Load())
	}
}

// gwPost posts body to url as an MCP client would and returns the status
// and the whole answer (JSON or an SSE stream) as text.
func gwPost(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
