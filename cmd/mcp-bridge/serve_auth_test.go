package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

func TestServeAuthUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--oauth-issuer", "https://auth.example.com"}, "--oauth-issuer needs --public-url"},
		{[]string{"--oauth-scope", "s"}, "need --oauth-issuer"},
		{[]string{"--public-url", "https://x.example/mcp"}, "need --oauth-issuer"},
		{[]string{"--oauth-issuer", "http://auth.example.com", "--public-url", "https://x.example/mcp"}, "must be https"},
		{[]string{"--oauth-issuer", "https://auth.example.com", "--public-url", "x.example/mcp"}, "absolute"},
		{[]string{"--oauth-issuer", "https://auth.example.com", "--public-url", "https://x.example/mcp", "--oauth-key-ttl", "0s"}, "--oauth-key-ttl must be positive"},
	} {
		code, _, stderr := runCLI(append(append([]string{"serve"}, c.args...), "--", bin["memos"])...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: code %d, stderr %q; want usage error %q", c.args, code, stderr, c.want)
		}
	}
	// mcpBridge.oauthIssuers names issuers --oauth-issuer trusts.
	dir := t.TempDir()
	file := filepath.Join(dir, "team.json")
	os.WriteFile(file, []byte(`{"mcpServers": {"m": {"command": "`+filepath.ToSlash(bin["memos"])+`"}},
		"mcpBridge": {"oauthIssuers": {"https://other.example.com": {"keyTTL": "5m"}}}}`), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--oauth-issuer", "https://auth.example.com", "--public-url", "https://x.example"}, `a key lifetime for "https://other.example.com", which is not a trusted issuer`},
		{nil, "mcpBridge.oauthIssuers needs --oauth-issuer"},
	} {
		code, _, stderr := runCLI(append([]string{"serve", "--config", file}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("--config %v: code %d, stderr %q; want usage error %q", c.args, code, stderr, c.want)
		}
	}
	// A token file is enough to listen off loopback.
	code, _, stderr := runCLI("serve", "--listen", "0.0.0.0:0", "--auth-token-file", filepath.Join(dir, "missing"), "--", bin["memos"])
	if code == exitUsage || !strings.Contains(stderr, "token file") {
		t.Errorf("--listen 0.0.0.0 with a token file: code %d, %s", code, stderr)
	}
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// The whole binary as an OAuth resource server: the Go SDK client with a
// JWT from the test authorization server lists and calls memos' tools;
// without one it gets the 401 that points at the metadata, which names the
// issuer. Neither the JWT nor anything of it reaches the logs.
func TestServeOAuthEndToEnd(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	addr := freePort(t)
	public := "http://" + addr + "/mcp"
	p := startBridgeProc(t, "serve", "--listen", addr, "--oauth-issuer", as.Issuer, "--public-url", public,
		"--oauth-scope", "mcp:tools", "--log-level", "debug", "--", bin["memos"])
	waitReady(t, addr)
	tok := as.Token(authtest.Claims{Audience: []string{public}, Scope: "mcp:tools"})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, version := range []string{"", "2025-11-25"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: public, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearerTransport(tok)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%q: connect: %v", version, err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{"pageSize": 1}}); err != nil {
			t.Errorf("%q: tools/call: %v", version, err)
		}
		cs.Close()
	}

	code, _ := status(public, modernList, modernHdr)
	resp, err := http.Post(public, "application/json", strings.NewReader(modernList))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ch := resp.Header.Get("WWW-Authenticate")
	if code != 401 || !strings.Contains(ch, `resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("no token: %d %q", code, ch)
	}
	resp, err = http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		AS []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if len(md.AS) != 1 || md.AS[0] != as.Issuer {
		t.Errorf("metadata names %v, want %s", md.AS, as.Issuer)
	}
	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t, 30*time.Second)
	if logs := p.stderr.String(); strings.Contains(logs, tok) || strings.Contains(logs, tok[strings.LastIndex(tok, ".")+1:]) {
		t.Error("the token is in the logs")
	}
}

// serve --ca-file with --oauth-issuer: an authorization server whose https
// certificate is a private CA's is trusted for its metadata and keys, so
// its tokens are admitted; without the flag the issuer cannot be reached
// and the bridge says so (503 "authorization server unavailable").
func TestServeOAuthCAFile(t *testing.T) {
	as := authtest.NewTLS("")
	defer as.Close()
	caFile := filepath.Join(t.TempDir(), "as-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: as.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  int
	}{
		{[]string{"--ca-file", caFile}, http.StatusOK},
		{nil, http.StatusServiceUnavailable},
	} {
		addr := freePort(t)
		public := "http://" + addr + "/mcp"
		args := append([]string{"serve", "--listen", addr, "--oauth-issuer", as.Issuer, "--public-url", public}, tc.flags...)
		p := startBridgeProc(t, append(args, "--", bin["memos"])...)
		waitReady(t, addr)
		tok := as.Token(authtest.Claims{Audience: []string{public}})
		hdr := map[string]string{"Authorization": "Bearer " + tok}
		for k, v := range modernHdr {
			hdr[k] = v
		}
		if code, body := status(public, modernList, hdr); code != tc.want {
			t.Errorf("flags %v: a token of the https issuer: %d %s, want %d", tc.flags, code, body, tc.want)
		}
		p.cmd.Process.Kill()
		p.wait(t, 20*time.Second)
	}
}

// serve --oauth-key-ttl 2s with an issuer whose key set endpoint hangs
// after the first fetch: through the whole binary and its handler, every
// request with a token of the cached key is answered within 1 s, also
// after the keys' lifetime has passed (the stale set answers while a
// refresh is tried in the background).
func TestServeOAuthKeyTTLHungIssuer(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	defer as.HangJWKS(false)
	addr := freePort(t)
	public := "http://" + addr + "/mcp"
	p := startBridgeProc(t, "serve", "--listen", addr, "--oauth-issuer", as.Issuer, "--public-url", public,
		"--oauth-key-ttl", "2s", "--", bin["memos"])
	defer func() {
		p.cmd.Process.Kill()
		p.wait(t, 20*time.Second)
	}()
	waitReady(t, addr)
	hdr := map[string]string{"Authorization": "Bearer " + as.Token(authtest.Claims{Audience: []string{public}})}
	for k, v := range modernHdr {
		hdr[k] = v
	}
	if code, body := status(public, modernList, hdr); code != 200 {
		t.Fatalf("first request: %d %s", code, body)
	}
	as.HangJWKS(true)
	fetched := as.JWKSFetches.Load()
	var worst time.Duration
	n := 0
	tick := time.NewTicker(100 * time.Millisecond) // load generation, not synchronization
	defer tick.Stop()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); <-tick.C {
		start := time.Now()
		code, body := status(public, modernList, hdr)
		took := time.Since(start)
		worst, n = max(worst, took), n+1
		// The requirement is 1 s; a request that waited for the hung
		// fetch would take its 10 s timeout, so 4 s tells them apart on a
		// loaded machine too (the slowest is logged below).
		if code != 200 || took > 4*time.Second {
			t.Errorf("request %d: %d after %v: %s", n, code, took, body)
		}
	}
	t.Logf("%d requests over 5 s, key set endpoint hung, --oauth-key-ttl 2s: slowest %v", n, worst)
	if as.JWKSFetches.Load() == fetched {
		t.Error("no refresh was tried after the keys' lifetime")
	}
}
