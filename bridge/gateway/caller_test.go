package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// oauthGateway serves memos (which requires the scope memos:write on top
// of the common "mcp") and everything, with the aggregate and access logs
// on.
func oauthGateway(t *testing.T) (*testGateway, func(sub, scope string) string) {
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
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "everything": {"command": %q}},
  "mcpBridge": {"aggregate": true, "servers": {"memos": {"scopes": ["memos:write"]}}}}`, bins["memos"], bins["everything"])
	gw := startGatewayCfg(t, file, Config{Auth: hook, Base: serve.Config{AccessLog: true}})
	return gw, func(sub, scope string) string {
		return as.Token(authtest.Claims{Subject: sub, Audience: []string{public + AggregatePath}, Scope: scope})
	}
}

func aggClient(t *testing.T, ctx context.Context, gw *testGateway, token, version string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tl.Name] = true
	}
	return names
}

// Through the aggregated /mcp each server enforces its own scopes against
// the caller's: a token without memos:write sees none of memos' tools and
// cannot call them, in both eras, while everything's serve it; a token
// with the scope sees and calls memos. Each route sees the caller's own
// principal (its access log names the OAuth subject, not an internal
// one).
func TestAggregateCarriesCaller(t *testing.T) {
	gw, token := oauthGateway(t)
	for _, v := range versions[:2] {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			weak := aggClient(t, ctx, gw, token("alice", "mcp"), v.version)
			names := toolNames(t, ctx, weak)
			for n := range names {
				if strings.HasPrefix(n, "memos_") {
					t.Errorf("a caller without memos:write lists %s", n)
				}
			}
			if !names["everything_"+probes["everything"]] {
				t.Errorf("the caller's tools lack everything_%s: %v", probes["everything"], names)
			}
			callOK(t, ctx, weak, "everything_"+probes["everything"])
			res, err := weak.CallTool(ctx, &mcp.CallToolParams{Name: "memos_" + probes["memos"], Arguments: map[string]any{}})
			if err == nil && !res.IsError {
				t.Errorf("a caller without memos:write called memos_%s: %s", probes["memos"], toolText(res))
			}

			strong := aggClient(t, ctx, gw, token("bob", "mcp memos:write"), v.version)
			if names := toolNames(t, ctx, strong); !names["memos_"+probes["memos"]] {
				t.Errorf("a caller with memos:write lacks memos_%s: %v", probes["memos"], names)
			}
			callOK(t, ctx, strong, "memos_"+probes["memos"])
		})
	}
	// Each route's access log names the caller.
	seen := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(gw.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Server    string `json:"server"`
			Principal string `json:"principal"`
			Status    int    `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Principal == "" || line.Server == "" {
			continue
		}
		if seen[line.Server] == nil {
			seen[line.Server] = map[string]bool{}
		}
		sub := line.Principal[strings.LastIndex(line.Principal, " ")+1:]
		seen[line.Server][sub] = true
	}
	if !seen["memos"]["bob"] || seen["memos"]["alice"] {
		t.Errorf("memos' access log principals = %v, want bob and not alice", seen["memos"])
	}
	if !seen["everything"]["alice"] || !seen["everything"]["bob"] {
		t.Errorf("everything's access log principals = %v, want alice and bob", seen["everything"])
	}
	for server, ps := range seen {
		for p := range ps {
			if strings.HasPrefix(p, "token:") {
				t.Errorf("%s's access log names %q: an internal principal", server, p)
			}
		}
	}
}

// A route checks the aggregate's caller itself, in-process: an OAuth
// caller whose token lacks the route's own scope (memos:write) is refused
// by memos' Handler even when asked directly (the aggregate does not list
// memos for it either), with no credential that would let it through;
// one with the scope is admitted, and memos' access log names it, not an
// internal principal.
func TestRouteRefusesCallerWithoutScopes(t *testing.T) {
	gw, _ := oauthGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	weak := &caller{key: "oauth:weak", name: "https://as.example weak", scopes: []string{"mcp"}}
	if _, err := gw.openRoute(ctx, "memos", weak); !errors.Is(err, serve.ErrCallerRefused) {
		t.Fatalf("memos opened for a caller without memos:write: %v", err)
	}
	conn, err := gw.openRoute(ctx, "everything", weak)
	if err != nil {
		t.Fatalf("everything refused a caller with the common scope: %v", err)
	}
	conn.Close()
	strong := &caller{key: "oauth:strong", name: "https://as.example strong", scopes: []string{"mcp", "memos:write"}}
	conn, err = gw.openRoute(ctx, "memos", strong)
	if err != nil {
		t.Fatal(err)
	}
	handshake(t, conn)
	if res := ask(t, conn, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, probes["memos"])); res["result"] == nil {
		t.Fatalf("tools/call = %v", res)
	}
	conn.Close()
	var principals []string
	sc := bufio.NewScanner(strings.NewReader(gw.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Server, Principal, Message string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Server == "memos" && line.Message == "request" {
			principals = append(principals, line.Principal)
		}
	}
	if len(principals) == 0 {
		t.Fatal("no access log line of memos")
	}
	for _, p := range principals {
		if p != strong.name {
			t.Errorf("memos' access log names %q, want %q", p, strong.name)
		}
	}
}

// handshake initializes an in-process session.
func handshake(t *testing.T, conn aggregate.Conn) {
	t.Helper()
	init := ask(t, conn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if res, _ := init["result"].(map[string]any); res == nil || res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize = %v", init)
	}
	if err := conn.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
}

// ask sends a request and returns the message that answers it (what comes
// before it, notifications, is skipped).
func ask(t *testing.T, conn aggregate.Conn, req string) map[string]any {
	t.Helper()
	if err := conn.Send([]byte(req)); err != nil {
		t.Fatal(err)
	}
	for {
		var got wire.Message
		if err := conn.Recv(&got); err != nil {
			t.Fatal(err)
		}
		msg := got.Raw
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%v: %s", err, msg)
		}
		if _, ok := m["id"]; ok && m["method"] == nil {
			return m
		}
	}
}

// With static tokens, each route sees the aggregate's caller as the
// holder of its own token: its name from the token file, in the route's
// access log.
func TestAggregateCarriesStaticCaller(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bins["memos"])
	gw := startGatewayWith(t, file, serve.Config{AccessLog: true, NamedTokens: []auth.NamedToken{{Name: "team-a", Token: "tok-a"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range versions[:2] {
		callOK(t, ctx, aggClient(t, ctx, gw, "tok-a", v.version), "memos_"+probes["memos"])
	}
	found := false
	sc := bufio.NewScanner(strings.NewReader(gw.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Server, Principal string }
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Server != "memos" || line.Principal == "" {
			continue
		}
		if line.Principal != "team-a" {
			t.Errorf("memos' access log names %q, want team-a", line.Principal)
		}
		found = true
	}
	if !found {
		t.Error("no access log line of memos")
	}
}

// With inbound auth on, a server's readiness does not tell an
// unauthenticated caller whether the name exists: an enabled, a disabled
// and an unknown name get the same 401; a token the gateway accepts gets
// the real answer.
func TestReadyzNotEnumerable(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "off": {"command": "x", "disabled": true}}}`, bins["memos"])
	gw := startGatewayWith(t, file, serve.Config{AuthTokens: []string{"tok"}})
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest("GET", gw.URL+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	first, body := get("/servers/memos/readyz", "")
	for _, p := range []string{"/servers/off/readyz", "/servers/nosuch/readyz"} {
		for _, tok := range []string{"", "wrong"} {
			if code, b := get(p, tok); code != first || b != body || code != http.StatusUnauthorized {
				t.Errorf("%s (token %q): %d %q, want the same as memos': %d %q", p, tok, code, b, first, body)
			}
		}
	}
	waitReadyAuth := func() int {
		code, _ := get("/servers/memos/readyz", "tok")
		return code
	}
	if code := waitReadyAuth(); code != 200 && code != 503 {
		t.Errorf("memos' readiness with a token: %d", code)
	}
	if code, _ := get("/servers/nosuch/readyz", "tok"); code != http.StatusNotFound {
		t.Errorf("an unknown server's readiness with a token: %d, want 404", code)
	}
	// The MCP endpoint does not tell either: the same 401 (status,
	// challenge, body) for an enabled, a disabled and an unknown name.
	post := func(path string) (int, string, string) {
		resp, err := http.Post(gw.URL+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	c0, h0, b0 := post(Path("memos"))
	for _, name := range []string{"off", "nosuch"} {
		if c, h, b := post(Path(name)); c != c0 || h != h0 || b != b0 || c != http.StatusUnauthorized {
			t.Errorf("%s: %d %q %q, want memos' %d %q %q", name, c, h, b, c0, h0, b0)
		}
	}
}

// The same subject with fewer scopes is another caller: an aggregate made
// for a token with memos:write never serves a token without it.
func TestAggregateCallerScopesNotReused(t *testing.T) {
	gw, token := oauthGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range versions[:2] {
		strong := aggClient(t, ctx, gw, token("carol", "mcp memos:write"), v.version)
		callOK(t, ctx, strong, "memos_"+probes["memos"])
		weak := aggClient(t, ctx, gw, token("carol", "mcp"), v.version)
		if names := toolNames(t, ctx, weak); names["memos_"+probes["memos"]] {
			t.Errorf("%s: carol's token without memos:write lists memos through the aggregate made for her other token", v.name)
		}
	}
}

// The callers' aggregates are bounded by MaxPrincipals: past it, one with
// no session and no request in flight makes way for a newcomer, and when
// none is idle the newcomer gets 503.
func TestAggregateCallersBounded(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bins["memos"])
	gw := startGatewayWith(t, file, serve.Config{MaxPrincipals: 1, AuthTokens: []string{"tok-a", "tok-b"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// a's 2025 session holds its aggregate: b is refused.
	a := aggClient(t, ctx, gw, "tok-a", "2025-11-25")
	callOK(t, ctx, a, "memos_"+probes["memos"])
	hc := &http.Client{Transport: bearer{"tok-b", http.DefaultTransport}}
	_, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("b past the bound: %v, want 503", err)
	}
	// Once a's session ends, b is served (a's aggregate makes way).
	a.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil {
			callOK(t, ctx, b, "memos_"+probes["memos"])
			b.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never served after a's session ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint while a's session ends
	}
}

// A static token removed from the token file (SetTokens) ends its
// caller's aggregate: its open session is gone, and the token opens
// nothing any more.
func TestAggregateRevokedTokenDropped(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bins["memos"])
	gw := startGatewayWith(t, file, serve.Config{NamedTokens: []auth.NamedToken{{Name: "a", Token: "tok-a"}, {Name: "b", Token: "tok-b"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := aggClient(t, ctx, gw, "tok-a", "2025-11-25")
	callOK(t, ctx, a, "memos_"+probes["memos"])
	gw.SetTokens([]auth.NamedToken{{Name: "b", Token: "tok-b"}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "memos_" + probes["memos"], Arguments: map[string]any{}})
		if err != nil || res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the revoked token's session still calls memos")
		}
		time.Sleep(50 * time.Millisecond) // polling while the retired aggregate closes
	}
	gw.mu.RLock()
	f := gw.agg
	gw.mu.RUnlock()
	f.each(func(ca *callerAgg) {
		if ca.c.static {
			t.Errorf("the aggregate of static caller %s is left", callerLabel(ca.c))
		}
	})
}

// A token added to the token file (SetTokens) opens the aggregate: the
// caller's aggregate, made after the re-read, takes it.
func TestAggregateAddedTokenServed(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}, "mcpBridge": {"aggregate": true}}`, bins["memos"])
	gw := startGatewayWith(t, file, serve.Config{NamedTokens: []auth.NamedToken{{Name: "a", Token: "tok-a"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gw.SetTokens([]auth.NamedToken{{Name: "a", Token: "tok-a"}, {Name: "c", Token: "tok-c"}})
	for _, v := range versions[:2] {
		callOK(t, ctx, aggClient(t, ctx, gw, "tok-c", v.version), "memos_"+probes["memos"])
	}
}
