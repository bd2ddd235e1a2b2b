package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

// Token-file names are the principals' names in the logs; the tokens
// appear nowhere there. A re-read file (SetTokens) takes effect at once.
func TestNamedTokensInLogsAndReload(t *testing.T) {
	const ta, tb, tc = "tok-alice-s3cret", "tok-bob-s3cret", "tok-carol-s3cret"
	b := startBridge(t, Config{Command: testChild(), ChildPer: ChildPerPrincipal,
		NamedTokens: []auth.NamedToken{{Name: "alice", Token: ta}, {Name: "bob", Token: tb}}})
	modernCall(t, b.URL, ta, "env")
	modernCall(t, b.URL, tb, "env")
	legacyInit(t, b.URL, "Bearer "+tb, "2025-11-25")
	logs := b.log.String()
	if !strings.Contains(logs, `"principal":"bob"`) || !strings.Contains(logs, "started a child for a new principal") {
		t.Errorf("the principal's name is not in the logs:\n%s", logs)
	}
	for _, tok := range []string{ta, tb} {
		if strings.Contains(logs, tok) {
			t.Errorf("a token is in the logs")
		}
	}
	// The child's environment holds no token of the file, even one given
	// only through it (no --auth-token).
	if env := modernCall(t, b.URL, ta, "env"); strings.Contains(env, ta) {
		t.Error("the child's environment holds a token")
	}

	b.SetTokens([]auth.NamedToken{{Name: "carol", Token: tc}, {Name: "bob", Token: tb}})
	if resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+modernMeta+`}}`,
		map[string]string{"Authorization": "Bearer " + ta, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}); resp.StatusCode != 401 {
		t.Errorf("a removed token: %d, want 401", resp.StatusCode)
	}
	modernCall(t, b.URL, tc, "env")
	if !strings.Contains(b.log.String(), `"principal":"carol"`) {
		t.Error("the new token's name is not in the logs")
	}
	// An emptied set refuses everyone; it does not open the endpoint.
	b.SetTokens(nil)
	if resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+modernMeta+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}); resp.StatusCode != 401 {
		t.Errorf("no token after SetTokens(nil): %d, want 401", resp.StatusCode)
	}
}

// Static tokens only: no OAuth metadata is advertised, and the 401 says in
// words what is wanted.
func TestStaticTokenChallenge(t *testing.T) {
	b := startBridge(t, Config{Command: testChild(), AuthToken: "tok-1"})
	base := strings.TrimSuffix(b.URL, "/mcp")
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404 without OAuth", p, resp.StatusCode)
		}
	}
	// Where a host looks for an OAuth login after the 401, the 404 says
	// what to do instead (Claude Code shows this body to the user).
	resp, err := http.Post(base+"/register", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), "static bearer token") {
		t.Errorf("/register: %d %q", resp.StatusCode, body)
	}
	resp, _ = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	ch := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != 401 || !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, "error_description=") || strings.Contains(ch, "resource_metadata") {
		t.Errorf("no token: %d %q", resp.StatusCode, ch)
	}
	resp, _ = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": "Bearer nope"})
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `error="invalid_token"`) {
		t.Errorf("wrong token: %d %q", resp.StatusCode, ch)
	}
}

const publicURL = "https://mcp.example.com/mcp"

func oauthBridge(t *testing.T, as *authtest.Server, cfg Config, scopes []string, argv ...string) *testBridge {
	t.Helper()
	s, err := auth.New(auth.Config{Issuers: []string{as.Issuer}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resource(publicURL, scopes)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = rs
	return startBridge(t, cfg, argv...)
}

func TestOAuthResourceServer(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	b := oauthBridge(t, as, Config{Command: testChild(), ChildPer: ChildPerPrincipal, MaxPrincipals: 2}, []string{"mcp:tools"})
	base := strings.TrimSuffix(b.URL, "/mcp")
	aud := []string{publicURL}
	alice := as.Token(authtest.Claims{Subject: "alice", Audience: aud, Scope: "mcp:tools"})
	bob := as.Token(authtest.Claims{Subject: "bob", Audience: aud, Scope: "mcp:tools"})
	ping := func(tok string) *http.Response {
		hdr := modernHeaders("ping", "")
		if tok != "" {
			hdr["Authorization"] = "Bearer " + tok
		}
		resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+modernMeta+`}}`, hdr)
		return resp
	}
	t.Run("metadata", func(t *testing.T) {
		for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			var md struct {
				Resource string   `json:"resource"`
				AS       []string `json:"authorization_servers"`
				Scopes   []string `json:"scopes_supported"`
			}
			json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if resp.StatusCode != 200 || md.Resource != publicURL || len(md.AS) != 1 || md.AS[0] != as.Issuer || md.Scopes[0] != "mcp:tools" {
				t.Errorf("%s: %d %+v", p, resp.StatusCode, md)
			}
		}
	})
	t.Run("challenges", func(t *testing.T) {
		resp := ping("")
		want := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		for name, tok := range map[string]string{
			"wrong audience": as.Token(authtest.Claims{Audience: []string{"https://other.example/mcp"}, Scope: "mcp:tools"}),
			"expired":        as.Token(authtest.Claims{Audience: aud, Scope: "mcp:tools", Expiry: time.Now().Add(-time.Hour)}),
			"unknown key":    as.Token(authtest.Claims{Audience: aud, Scope: "mcp:tools", KeyID: "nope"}),
			"wrong issuer":   as.Token(authtest.Claims{Issuer: "https://evil.example", Audience: aud, Scope: "mcp:tools"}),
		} {
			if resp := ping(tok); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("%s: %d %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		resp = ping(as.Token(authtest.Claims{Audience: aud, Scope: "other"}))
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="mcp:tools"`) {
			t.Errorf("missing scope: %d %q", resp.StatusCode, ch)
		}
	})
	t.Run("principals", func(t *testing.T) {
		if env := modernCall(t, b.URL, alice, "env"); strings.Contains(env, alice) {
			t.Error("the child's environment holds the client's token")
		}
		sid := legacyInit(t, b.URL, "Bearer "+alice, "2025-11-25")
		// bob's token with alice's session: as if there were none.
		resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid, "Authorization": "Bearer " + bob})
		if resp.StatusCode != 404 {
			t.Errorf("bob using alice's session: %d, want 404", resp.StatusCode)
		}
		resp, _ = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid, "Authorization": "Bearer " + alice})
		if resp.StatusCode != 200 {
			t.Errorf("alice using her session: %d", resp.StatusCode)
		}
		modernCall(t, b.URL, bob, "env")
		if !strings.Contains(b.log.String(), `"principal":"`+as.Issuer+` bob"`) {
			t.Errorf("bob's child is not logged under his subject")
		}
		// MaxPrincipals 2: a third subject gets no child of its own.
		if resp := ping(as.Token(authtest.Claims{Subject: "carol", Audience: aud, Scope: "mcp:tools"})); resp.StatusCode != 503 {
			t.Errorf("a third principal past MaxPrincipals: %d, want 503", resp.StatusCode)
		}
		for _, tok := range []string{alice, bob} {
			if strings.Contains(b.log.String(), tok) {
				t.Error("a token is in the logs")
			}
		}
	})
}

// headerTransport adds an Authorization header, as a host configured with
// a token does.
type headerTransport struct{ authz string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", h.authz)
	return http.DefaultTransport.RoundTrip(r)
}

// The Go SDK client through serve with a JWT, in both eras.
func TestOAuthGoSDKClient(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	b := oauthBridge(t, as, Config{}, []string{"mcp:tools"}, bins["memos"])
	tok := as.Token(authtest.Claims{Audience: []string{publicURL}, Scope: "mcp:tools"})
	for _, version := range []string{"", "2025-11-25"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: headerTransport{"Bearer " + tok}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			cancel()
			t.Fatalf("%q: connect: %v", version, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Errorf("%q: tools/list: %v", version, err)
		}
		cs.Close()
		cancel()
	}
	// Without the token the SDK gets the 401 (it has no OAuth handler).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL, MaxRetries: -1}, nil); err == nil {
		t.Error("connected without a token")
	}
}

// A Handler at another path (a gateway's /servers/<name>/mcp) publishes
// its metadata after the well-known prefix at that path, not the root
// form, which belongs to /mcp. A wrapper learns the principal through
// PrincipalSlot.
func TestOAuthMetadataPerPathAndPrincipalSlot(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	s, _ := auth.New(auth.Config{Issuers: []string{as.Issuer}})
	rs, _ := s.Resource("https://gw.example.com/servers/notes/mcp", []string{"notes"})
	h, err := New(Config{Command: testChild(), Path: "/servers/notes/mcp", Auth: rs})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 16)
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, name := auth.PrincipalSlot(r)
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/mcp") && r.Method == http.MethodPost {
			seen <- name()
		}
	})
	h.Start()
	srv := httptest.NewServer(wrapped)
	t.Cleanup(func() {
		h.BeginShutdown()
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	for path, want := range map[string]int{
		"/.well-known/oauth-protected-resource/servers/notes/mcp": 200,
		"/.well-known/oauth-protected-resource":                   404,
		"/.well-known/oauth-protected-resource/mcp":               404,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	tok := as.Token(authtest.Claims{Subject: "dana", Audience: []string{"https://gw.example.com/servers/notes/mcp"}, Scope: "notes"})
	waitReady(t, srv.URL)
	if got := modernCall(t, srv.URL+"/servers/notes/mcp", tok, "env"); got == "" {
		t.Fatal("no answer")
	}
	if got := <-seen; got != as.Issuer+" dana" {
		t.Errorf("PrincipalSlot gave %q", got)
	}
}

// Static tokens and OAuth together: either admits; a token that is
// neither gets the OAuth challenge (the way to log in).
func TestStaticTokensBesideOAuth(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	b := oauthBridge(t, as, Config{Command: testChild(), NamedTokens: []auth.NamedToken{{Name: "ci", Token: "tok-ci-Rt5"}}}, nil)
	if got := modernCall(t, b.URL, "tok-ci-Rt5", "env"); got == "" {
		t.Error("static token: no answer")
	}
	if got := modernCall(t, b.URL, as.Token(authtest.Claims{Audience: []string{publicURL}}), "env"); got == "" {
		t.Error("JWT: no answer")
	}
	hdr := modernHeaders("ping", "")
	hdr["Authorization"] = "Bearer tok-not-listed"
	resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+modernMeta+`}}`, hdr)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, "resource_metadata=") || !strings.Contains(ch, "invalid_token") {
		t.Errorf("neither: %d %q", resp.StatusCode, ch)
	}
}
