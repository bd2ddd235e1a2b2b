package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func TestParseChallenges(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []Challenge
	}{
		{[]string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource", scope="files:read files:write"`},
			[]Challenge{{Scheme: "bearer", Params: map[string]string{"resource_metadata": "https://a.example/.well-known/oauth-protected-resource", "scope": "files:read files:write"}}}},
		{[]string{`Basic realm="x", Bearer error=insufficient_scope, scope="a"`},
			[]Challenge{{Scheme: "basic", Params: map[string]string{"realm": "x"}}, {Scheme: "bearer", Params: map[string]string{"error": "insufficient_scope", "scope": "a"}}}},
		{[]string{`Negotiate abc==, Bearer`, `DPoP algs="ES256"`},
			[]Challenge{{Scheme: "negotiate", Params: map[string]string{}, Token68: "abc=="}, {Scheme: "bearer", Params: map[string]string{}}, {Scheme: "dpop", Params: map[string]string{"algs": "ES256"}}}},
		{[]string{`Bearer realm="a \"q\" b",REALM="dup"`},
			[]Challenge{{Scheme: "bearer", Params: map[string]string{"realm": `a "q" b`}}}},
		{[]string{`Bearer scope="unterminated`}, []Challenge{{Scheme: "bearer", Params: map[string]string{}}}},
	} {
		h := http.Header{"Www-Authenticate": tc.in}
		if got := ParseChallenges(h); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

func TestWellKnownOrder(t *testing.T) {
	got, _ := serverWellKnown("https://auth.example.com/tenant1")
	want := []string{
		"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration",
	}
	if !slices.Equal(got, want) {
		t.Errorf("path issuer: %q", got)
	}
	got, _ = serverWellKnown("https://auth.example.com")
	if !slices.Equal(got, []string{"https://auth.example.com/.well-known/oauth-authorization-server", "https://auth.example.com/.well-known/openid-configuration"}) {
		t.Errorf("root issuer: %q", got)
	}
	u := mustURL("https://example.com/public/mcp")
	if got := resourceWellKnown(u); !slices.Equal(got, []string{"https://example.com/.well-known/oauth-protected-resource/public/mcp", "https://example.com/.well-known/oauth-protected-resource"}) {
		t.Errorf("resource: %q", got)
	}
}

// RFC 9728 §3.3: the metadata's resource is identical to the endpoint
// (canonical forms), or to the origin for the origin's well-known URL; a
// parent path is another resource.
func TestResourceIdentical(t *testing.T) {
	for _, tc := range []struct {
		res, ep string
		root    bool
		ok      bool
	}{
		{"https://a.example/mcp", "https://a.example/mcp", false, true},
		{"https://A.example/mcp/", "https://a.example/mcp", false, true},
		{"https://a.example", "https://a.example/mcp", true, true},
		{"https://a.example/", "https://a.example/mcp", true, true},
		{"https://a.example/mcp", "https://a.example/mcp", true, true},
		{"https://a.example", "https://a.example/mcp", false, false},
		{"https://a.example/api", "https://a.example/api/mcp", false, false},
		{"https://a.example/api", "https://a.example/api/mcp", true, false},
		{"https://evil.example/mcp", "https://a.example/mcp", false, false},
		{"https://a.example/mc", "https://a.example/mcp", false, false},
		{"http://a.example/mcp", "https://a.example/mcp", false, false},
	} {
		if got := resourceIdentical(tc.res, tc.ep, tc.root); got != tc.ok {
			t.Errorf("resourceIdentical(%q, %q, root=%v) = %v", tc.res, tc.ep, tc.root, got)
		}
	}
}

func TestServerMetadataIssuer(t *testing.T) {
	b := []byte(`{"issuer":"https://honest.example","authorization_endpoint":"https://honest.example/a","token_endpoint":"https://honest.example/t"}`)
	if _, err := ParseServerMetadata(b, "https://attacker.example"); err == nil {
		t.Error("metadata with another issuer accepted")
	}
	m, err := ParseServerMetadata(b, "https://honest.example")
	if err != nil || m.SupportsPKCE() {
		t.Errorf("%v, PKCE %v (no code_challenge_methods_supported)", err, m.SupportsPKCE())
	}
}

// A token x/oauth2 decoded: "bearer" in any case, expires_in as a numeric
// string counted on this package's clock, scope split; another token type
// refused.
func TestConvertToken(t *testing.T) {
	now := time.Unix(1000, 0)
	ot := (&oauth2.Token{AccessToken: "a", TokenType: "bearer"}).WithExtra(map[string]any{"expires_in": "60", "scope": "x y"})
	tok, err := convertToken(ot, now)
	if err != nil || !tok.Expiry.Equal(now.Add(time.Minute)) || !slices.Equal(tok.Scopes, []string{"x", "y"}) || tok.TokenType != "Bearer" {
		t.Errorf("%+v %v", tok, err)
	}
	ot = (&oauth2.Token{AccessToken: "a"}).WithExtra(url.Values{"expires_in": {"90"}})
	if tok, err := convertToken(ot, now); err != nil || !tok.Expiry.Equal(now.Add(90*time.Second)) {
		t.Errorf("form-encoded: %+v %v", tok, err)
	}
	if _, err := convertToken(&oauth2.Token{AccessToken: "a", TokenType: "mac"}, now); err == nil {
		t.Error("non-Bearer token accepted")
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://x/y", scope="a b"`, `Basic abc==, Bearer error="insufficient_scope"`, `Bearer realm="\"`, `,,=,"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range ParseChallenges(http.Header{"Www-Authenticate": {s}}) {
			if c.Scheme == "" {
				t.Fatalf("empty scheme from %q", s)
			}
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://a/mcp","authorization_servers":["https://as"],"scopes_supported":["x"]}`))
	f.Add([]byte(`{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"client_id":"c","client_secret":"s","client_secret_expires_at":1e30}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseResourceMetadata(b); err == nil && len(m.AuthorizationServers) == 0 {
			t.Fatal("resource metadata without authorization servers accepted")
		}
		if m, err := ParseServerMetadata(b, "https://as"); err == nil && m.Issuer != "https://as" {
			t.Fatal("issuer mismatch accepted")
		}
		if c, err := ParseRegistration(b); err == nil && c.ID == "" {
			t.Fatal("registration without client_id accepted")
		}
	})
}

// 2025-03-26: metadata at the server's origin may state an issuer with a
// path on that origin; one on another origin is not used (the default
// endpoints are).
func TestLegacyOriginMetadata(t *testing.T) {
	for _, tc := range []struct {
		issuerPath string // "" = another origin
		fallback   bool
	}{{"/oauth", false}, {"", true}} {
		var srvURL string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/.well-known/oauth-authorization-server" {
				http.NotFound(w, r)
				return
			}
			iss := srvURL + tc.issuerPath
			if tc.issuerPath == "" {
				iss = "https://elsewhere.example"
			}
			writeJSON(w, map[string]any{"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token", "code_challenge_methods_supported": []string{"S256"}})
		}))
		srvURL = srv.URL
		a, err := New(Config{ServerURL: srv.URL + "/mcp"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := a.discover(context.Background(), Challenge{})
		a.Close()
		srv.CloseClientConnections()
		srv.Close()
		if err != nil || d.Server.Fallback != tc.fallback {
			t.Errorf("issuer path %q: %+v %v, want fallback %v", tc.issuerPath, d, err, tc.fallback)
		}
	}
}
