package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTokenRequestRedirectRefused: an authorization server whose token
// endpoint redirects to another origin (here another port of the same
// host) does not get the client secret sent there: the login fails and
// the other origin receives nothing. Without the outbound policy
// net/http follows a 302 as a GET that carries the Basic credentials
// (it keeps Authorization for the same host name on any port).
func TestTokenRequestRedirectRefused(t *testing.T) {
	var elsewhere, withSecret atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			withSecret.Add(1)
		}
	}))
	defer other.Close()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := srv.URL
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			json.NewEncoder(w).Encode(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": base, "token_endpoint": base + "/token",
				"authorization_endpoint": base + "/authorize", "code_challenge_methods_supported": []string{"S256"},
				"grant_types_supported": []string{"client_credentials"}})
		case "/token":
			http.Redirect(w, r, other.URL+"/token", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	a, err := New(Config{ServerURL: srv.URL + "/mcp", Grant: GrantClientCredentials, ClientID: "svc", ClientSecret: "client-secret-value"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = a.Login(ctx)
	if err == nil {
		t.Fatal("login succeeded through a redirect to another origin")
	}
	t.Logf("login: %v", err)
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin received %d requests, %d with the client's credentials", n, withSecret.Load())
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}
