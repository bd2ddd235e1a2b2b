package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

// tlsIssuer is an https issuer whose metadata points at its own /jwks and
// /introspect, which redirect (status) to the same paths on plain, an
// http authorization server holding the real keys and verdicts.
func tlsIssuer(t *testing.T, status int, plain *authtest.Server) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
	})
	for _, p := range []string{"/jwks", "/introspect"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, plain.URL+p, status)
		})
	}
	return srv
}

// TestJWKSRedirectToHTTPRefused: an https issuer's key set that
// redirects to plain http is not fetched there, so a token signed by the
// keys behind that redirect is not accepted (issue 28: keys fetched over
// http could be forged by anyone on the path).
func TestJWKSRedirectToHTTPRefused(t *testing.T) {
	plain := authtest.New("")
	defer plain.Close()
	for _, status := range []int{301, 302, 307, 308} {
		iss := tlsIssuer(t, status, plain)
		hc := iss.Client()
		s, err := New(Config{Issuers: []string{iss.URL}, HTTPClient: hc, KeyRefetchInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := s.Resource(resourceURL, nil)
		tok := plain.Token(authtest.Claims{Issuer: iss.URL, Audience: []string{resourceURL}})
		if _, err := rs.Verify(context.Background(), tok); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%d: %v, want ErrUnavailable", status, err)
		}
		hc.CloseIdleConnections()
	}
	if n := plain.JWKSFetches.Load(); n != 0 {
		t.Errorf("the http key set was fetched %d times", n)
	}
}

// TestIntrospectionRedirectToHTTPRefused: an introspection endpoint that
// redirects to plain http gets neither the client secret nor the user's
// token sent there; the request is answered 503 (no verdict), not 200.
func TestIntrospectionRedirectToHTTPRefused(t *testing.T) {
	plain := authtest.New("")
	defer plain.Close()
	plain.RequireClientAuth("bridge", "intro-secret")
	for _, status := range []int{307, 308} {
		iss := tlsIssuer(t, status, plain)
		hc := iss.Client()
		s, err := New(Config{Issuers: []string{iss.URL}, HTTPClient: hc,
			IntrospectionURL: iss.URL + "/introspect", IntrospectionClientID: "bridge", IntrospectionSecret: "intro-secret"})
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := s.Resource(resourceURL, nil)
		tok := plain.Opaque(map[string]any{"active": true, "sub": "bob", "iss": iss.URL, "aud": resourceURL})
		if code, _, p := authenticate(rs, tok); code != http.StatusServiceUnavailable {
			t.Errorf("%d: status %d (principal %q), want 503", status, code, p)
		}
		hc.CloseIdleConnections()
	}
	if n := plain.Introspections.Load(); n != 0 {
		t.Errorf("the http introspection endpoint got %d requests", n)
	}
}
