package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

// bearer adds a token to every request of a Go SDK client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// With OAuth on, every endpoint is its own protected resource: a token
// for /servers/memos/mcp opens memos and nothing else, each endpoint
// publishes its own RFC 9728 metadata, a server's scopes from the file
// are required on top of the common ones, and the aggregated /mcp reaches
// every server the caller's scopes open (caller_test.go: those it does
// not open are left out).
func TestGatewayOAuthPerEndpoint(t *testing.T) {
	as := authtest.New("")
	t.Cleanup(as.Close)
	rs, err := auth.New(auth.Config{Issuers: []string{as.Issuer}})
	if err != nil {
		t.Fatal(err)
	}
	const public = "https://mcp.example.com"
	hook := func(path string, scopes []string) (auth.Authenticator, error) {
		return rs.Resource(public+path, append([]string{"mcp"}, scopes...))
	}
	remote := remoteServer(t)
	file := strings.Replace(configJSON(remote, ""), `"mcpBridge": {"servers": {`,
		`"mcpBridge": {"aggregate": true, "servers": {"memos": {"scopes": ["memos:write"]}, `, 1)
	gw := startGatewayCfg(t, file, Config{Auth: hook})

	token := func(aud, scope string) string {
		return as.Token(authtest.Claims{Audience: []string{public + aud}, Scope: scope})
	}
	post := func(path, tok string) *http.Response {
		req, _ := http.NewRequest("POST", gw.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	memosTok := token("/servers/memos/mcp", "mcp memos:write")
	if resp := post("/servers/memos/mcp", ""); resp.StatusCode != 401 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+public+"/.well-known/oauth-protected-resource/servers/memos/mcp") {
		t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := post("/servers/everything/mcp", memosTok); resp.StatusCode != 401 {
		t.Errorf("memos' token at /servers/everything/mcp: %d, want 401 (another audience)", resp.StatusCode)
	}
	if resp := post("/servers/memos/mcp", token("/servers/memos/mcp", "mcp")); resp.StatusCode != 403 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Errorf("without memos:write: %d %q, want 403 insufficient_scope", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := post("/servers/everything/mcp", token("/servers/everything/mcp", "mcp")); resp.StatusCode != 200 {
		t.Errorf("everything's own token: %d", resp.StatusCode)
	}

	resp, err := http.Get(gw.URL + "/.well-known/oauth-protected-resource/servers/memos/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Resource        string   `json:"resource"`
		Servers         []string `json:"authorization_servers"`
		ScopesSupported []string `json:"scopes_supported"`
	}
	err = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if err != nil || md.Resource != public+"/servers/memos/mcp" || len(md.Servers) != 1 || md.Servers[0] != as.Issuer {
		t.Errorf("memos metadata: %+v (%v)", md, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer{memosTok, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gw-oauth", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/servers/memos/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callOK(t, ctx, cs, probes["memos"])

	hc = &http.Client{Transport: bearer{token(AggregatePath, "mcp memos:write"), http.DefaultTransport}}
	agg, err := mcp.NewClient(&mcp.Implementation{Name: "gw-oauth", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	for server, tool := range probes {
		callOK(t, ctx, agg, server+"_"+tool)
	}
}
