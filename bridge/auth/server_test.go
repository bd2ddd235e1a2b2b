package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

const resourceURL = "https://mcp.example.com/mcp"

func newResource(t *testing.T, as *authtest.Server, scopes []string, mod func(*Config)) *Resource {
	t.Helper()
	cfg := Config{Issuers: []string{as.Issuer}, KeyRefetchInterval: -1}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rs, err := s.Resource(resourceURL, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// authenticate runs Authenticate as serve would and returns the status
// (200 when admitted) and the challenge.
func authenticate(rs *Resource, tok string) (int, string, string) {
	status, h, p := authenticateHeader(rs, tok)
	return status, h.Get("WWW-Authenticate"), p
}

// authenticateHeader is authenticate with every header of the answer.
func authenticateHeader(rs *Resource, tok string) (int, http.Header, string) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	p, err := rs.Authenticate(rec, r)
	status := http.StatusOK
	var e *Error
	if errors.As(err, &e) {
		status = e.Status
	} else if err != nil {
		status = -1
	}
	return status, rec.Header(), p
}

func TestJWTRightAudienceAdmitted(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, nil)
	// Canonical URI: upper-case scheme/host and a trailing slash are the
	// same resource.
	for _, aud := range []string{resourceURL, "HTTPS://MCP.example.com/mcp/"} {
		status, _, p := authenticate(rs, as.Token(authtest.Claims{Audience: []string{"other", aud}}))
		if status != 200 || p != as.Issuer+" alice" {
			t.Fatalf("aud %q: status %d principal %q", aud, status, p)
		}
	}
}

// alg none and HS256 tokens are built by hand: no library signs them.
func handMade(t *testing.T, alg string, claims map[string]any, key []byte) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	if alg == "none" {
		return in + "."
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(in))
	return in + "." + enc.EncodeToString(m.Sum(nil))
}

func TestJWTRefused(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	other := authtest.New("")
	defer other.Close()
	rs := newResource(t, as, nil, nil)
	good := map[string]any{"iss": as.Issuer, "sub": "mallory", "aud": resourceURL, "exp": time.Now().Add(time.Hour).Unix()}
	// The published key's JSON, as an attacker would fetch it, used as an
	// HMAC secret (algorithm confusion).
	resp, err := http.Get(as.URL + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	var jwks json.RawMessage
	json.NewDecoder(resp.Body).Decode(&jwks)
	resp.Body.Close()
	cases := []struct {
		name string
		tok  string
		want error
	}{
		{"wrong audience", as.Token(authtest.Claims{Audience: []string{"https://other.example.com/mcp"}}), ErrAudience},
		{"no audience", as.Token(authtest.Claims{}), ErrAudience},
		{"expired", as.Token(authtest.Claims{Audience: []string{resourceURL}, Expiry: time.Now().Add(-2 * time.Minute)}), ErrExpired},
		{"not yet valid", as.Token(authtest.Claims{Audience: []string{resourceURL}, NotBef: time.Now().Add(5 * time.Minute)}), ErrExpired},
		{"no exp", as.Token(authtest.Claims{Audience: []string{resourceURL}, NoExpiry: true}), ErrClaims},
		{"unknown key", as.Token(authtest.Claims{Audience: []string{resourceURL}, KeyID: "made-up"}), ErrUnknownKey},
		{"wrong issuer", other.Token(authtest.Claims{Audience: []string{resourceURL}}), ErrUnknownIssuer},
		{"trusted iss, other issuer's key", other.Token(authtest.Claims{Issuer: as.Issuer, Audience: []string{resourceURL}}), ErrUnknownKey},
		{"alg none", handMade(t, "none", good, nil), ErrMalformed},
		{"HS256 with the public key", handMade(t, "HS256", good, jwks), ErrMalformed},
		{"garbage", "not-a-token", ErrMalformed},
		{"past 16 KiB", strings.Repeat("a.", 10000), ErrMalformed},
	}
	for _, c := range cases {
		_, err := rs.Verify(context.Background(), c.tok)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		status, challenge, _ := authenticate(rs, c.tok)
		if status != 401 || !strings.Contains(challenge, `error="invalid_token"`) ||
			!strings.Contains(challenge, `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("%s: status %d, WWW-Authenticate %q", c.name, status, challenge)
		}
		if strings.Contains(challenge, c.tok) {
			t.Errorf("%s: the challenge echoes the token", c.name)
		}
	}
}

func TestNoTokenChallengeHasNoError(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, []string{"mcp:tools"}, nil)
	status, challenge, _ := authenticate(rs, "")
	want := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`
	if status != 401 || challenge != want {
		t.Fatalf("status %d, challenge %q, want %q", status, challenge, want)
	}
}

func TestScopes(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, []string{"mcp:tools", "mcp:read"}, nil)
	aud := []string{resourceURL}
	admitted := []authtest.Claims{
		{Audience: aud, Scope: "openid mcp:read mcp:tools"},
		{Audience: aud, Extra: map[string]any{"scp": []string{"mcp:tools", "mcp:read"}}}, // Okta
		{Audience: aud, Extra: map[string]any{"scp": "mcp:tools mcp:read"}},              // Entra
	}
	for _, c := range admitted {
		if status, _, _ := authenticate(rs, as.Token(c)); status != 200 {
			t.Errorf("%+v: status %d", c, status)
		}
	}
	status, challenge, _ := authenticate(rs, as.Token(authtest.Claims{Audience: aud, Scope: "mcp:read"}))
	if status != 403 || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="mcp:tools mcp:read"`) ||
		!strings.Contains(challenge, "resource_metadata=") {
		t.Fatalf("missing scope: status %d, challenge %q", status, challenge)
	}
}

func TestMetadataNamesIssuer(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, []string{"mcp:tools"}, nil)
	rec := httptest.NewRecorder()
	rs.ServeMetadata(rec, httptest.NewRequest(http.MethodGet, WellKnown+"/mcp", nil))
	var md map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil || rec.Code != 200 {
		t.Fatalf("status %d, %v: %s", rec.Code, err, rec.Body)
	}
	if md["resource"] != resourceURL || md["authorization_servers"].([]any)[0] != as.Issuer || md["scopes_supported"].([]any)[0] != "mcp:tools" {
		t.Fatalf("metadata %v", md)
	}
	s, _ := New(Config{Issuers: []string{as.Issuer}})
	defer s.Close()
	if r, _ := s.Resource("https://h.example/", nil); r.MetadataURL() != "https://h.example"+WellKnown || r.URI() != "https://h.example" {
		t.Fatalf("root resource: %s %s", r.URI(), r.MetadataURL())
	}
}

func TestKeyRotationPickedUp(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, nil)
	aud := []string{resourceURL}
	if status, _, _ := authenticate(rs, as.Token(authtest.Claims{Audience: aud})); status != 200 {
		t.Fatalf("before rotation: %d", status)
	}
	as.Rotate()
	if status, _, _ := authenticate(rs, as.Token(authtest.Claims{Audience: aud})); status != 200 {
		t.Fatalf("after rotation: %d", status)
	}
	if n := as.JWKSFetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (first use, new kid)", n)
	}
}

// A flood of tokens naming one made-up key costs the issuer one fetch per
// KeyRefetchInterval, not one per token (distinct kids: see
// TestRotationDuringGarbageKidStorm).
func TestUnknownKeyFloodRateLimited(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, func(c *Config) { c.KeyRefetchInterval = time.Hour })
	for i := range 100 {
		tok := as.Token(authtest.Claims{Audience: []string{resourceURL}, KeyID: "bogus"})
		if _, err := rs.Verify(context.Background(), tok); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	if n := as.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times for 100 tokens of one bogus kid, want 1", n)
	}
	// The real key still works.
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: []string{resourceURL}})); err != nil {
		t.Fatal(err)
	}
}

func TestIntrospection(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	as.RequireClientAuth("bridge", "s3cret:/+")
	rs := newResource(t, as, []string{"mcp:tools"}, func(c *Config) {
		c.IntrospectionURL = as.URL + "/introspect"
		c.IntrospectionClientID, c.IntrospectionSecret = "bridge", "s3cret:/+"
	})
	exp := time.Now().Add(time.Hour).Unix()
	active := as.Opaque(map[string]any{"active": true, "sub": "bob", "iss": as.Issuer, "aud": resourceURL, "scope": "mcp:tools", "exp": exp})
	status, _, p := authenticate(rs, active)
	if status != 200 || p != as.Issuer+" bob" {
		t.Fatalf("active: %d %q", status, p)
	}
	authenticate(rs, active)
	if n := as.Introspections.Load(); n != 1 {
		t.Fatalf("%d introspections for two requests with one token, want 1 (cached)", n)
	}
	for name, tok := range map[string]string{
		"inactive":      as.Opaque(map[string]any{"active": false}),
		"unknown":       "opaque-never-issued",
		"other aud":     as.Opaque(map[string]any{"active": true, "sub": "bob", "aud": "https://else.example", "scope": "mcp:tools", "exp": exp}),
		"no aud":        as.Opaque(map[string]any{"active": true, "sub": "bob", "scope": "mcp:tools", "exp": exp}),
		"expired":       as.Opaque(map[string]any{"active": true, "sub": "bob", "aud": resourceURL, "scope": "mcp:tools", "exp": time.Now().Add(-time.Hour).Unix()}),
		"other issuer":  as.Opaque(map[string]any{"active": true, "iss": "https://evil.example", "sub": "bob", "aud": resourceURL, "scope": "mcp:tools", "exp": exp}),
		"jwt-ish dots.": "a.b.c",
	} {
		if status, ch, _ := authenticate(rs, tok); status != 401 || !strings.Contains(ch, "invalid_token") {
			t.Errorf("%s: %d %q", name, status, ch)
		}
	}
	noScope := as.Opaque(map[string]any{"active": true, "sub": "bob", "aud": resourceURL, "exp": exp})
	if status, _, _ := authenticate(rs, noScope); status != 403 {
		t.Errorf("no scope: %d", status)
	}
	as.RequireClientAuth("bridge", "changed")
	if status, _, _ := authenticate(rs, as.Opaque(map[string]any{"active": true})); status != 503 {
		t.Errorf("introspection endpoint refusing the bridge: %d, want 503", status)
	}
}

func TestOIDCDiscoveryFallback(t *testing.T) {
	// Only the OpenID Connect location, appended to an issuer with a path.
	var keys *authtest.Server
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	keys = authtest.New("")
	defer keys.Close()
	iss := srv.URL + "/tenant1"
	mux.HandleFunc("/tenant1/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": keys.URL + "/jwks"})
	})
	s, _ := New(Config{Issuers: []string{iss}})
	defer s.Close()
	rs, _ := s.Resource(resourceURL, nil)
	if _, err := rs.Verify(context.Background(), keys.Token(authtest.Claims{Issuer: iss, Audience: []string{resourceURL}})); err != nil {
		t.Fatal(err)
	}
}

// Metadata whose issuer is not the one asked for is not used (RFC 8414
// §3.3), and a key set past maxDocument or a silent issuer end in
// ErrUnavailable (503), not a hang or an unbounded read.
func TestHostileIssuers(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)
	mux.HandleFunc("/.well-known/oauth-authorization-server/liar", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": "https://honest.example", "jwks_uri": srv.URL + "/huge"})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/huge", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL + "/huge", "jwks_uri": srv.URL + "/huge-jwks"})
	})
	mux.HandleFunc("/huge-jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"keys":[` + strings.Repeat(`{"kty":"oct","k":"AAAA"},`, maxDocument/20) + `{}]}`))
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	for _, path := range []string{"/liar", "/huge", "/slow"} {
		iss := srv.URL + path
		s, _ := New(Config{Issuers: []string{iss}, HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}})
		rs, _ := s.Resource(resourceURL, nil)
		as := authtest.New("")
		tok := as.Token(authtest.Claims{Issuer: iss, Audience: []string{resourceURL}})
		as.Close()
		if _, err := rs.Verify(context.Background(), tok); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", path, err)
		}
		if status, _, _ := authenticate(rs, tok); status != 503 {
			t.Errorf("%s: status %d, want 503", path, status)
		}
		s.Close()
	}
}

func TestConfigChecks(t *testing.T) {
	for _, iss := range []string{"http://auth.example.com", "auth.example.com", "https://a.example/?q=1", ""} {
		if _, err := New(Config{Issuers: []string{iss}}); err == nil {
			t.Errorf("issuer %q accepted", iss)
		}
	}
	s, _ := New(Config{Issuers: []string{"https://auth.example.com"}})
	for _, u := range []string{"mcp.example.com", "https://mcp.example.com#frag", "ftp://x/"} {
		if _, err := s.Resource(u, nil); err == nil {
			t.Errorf("public URL %q accepted", u)
		}
	}
	for _, sc := range []string{`a"b`, "a b", "offline_access", ""} {
		if _, err := s.Resource(resourceURL, []string{sc}); err == nil {
			t.Errorf("scope %q accepted", sc)
		}
	}
}

// Requests that arrive together before the keys are known share one
// fetch: the issuer sees one metadata and one key-set request.
func TestConcurrentFirstUseFetchesOnce(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, func(c *Config) { c.KeyRefetchInterval = time.Hour })
	tok := as.Token(authtest.Claims{Audience: []string{resourceURL}})
	errs := make(chan error, 32)
	for range 32 {
		go func() {
			_, err := rs.Verify(context.Background(), tok)
			errs <- err
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := as.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times for 32 concurrent first requests, want 1", n)
	}
}

// RS256 (Keycloak, Auth0, Entra sign with it), and a rotation from an EC
// key to an RSA one.
func TestJWTRS256(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, nil)
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: []string{resourceURL}})); err != nil {
		t.Fatal(err)
	}
	as.RotateRSA()
	tok := as.Token(authtest.Claims{Audience: []string{resourceURL}})
	if !strings.Contains(tok[:strings.Index(tok, ".")], "eyJhbGciOiJSUzI1NiI") {
		t.Fatalf("not an RS256 token")
	}
	if _, err := rs.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}
