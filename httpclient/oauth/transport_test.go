package oauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTransportKeepsTokenOnOrigin: even under an http.Client that
// follows every redirect (net/http's default), the Transport sends no
// request to another origin than the MCP server's, so the redirect
// target never sees the token or the body.
func TestTransportKeepsTokenOnOrigin(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer mcp.Close()
	a, err := New(Config{ServerURL: mcp.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.mu.Lock()
	a.grant, a.loaded = &Grant{Token: Token{AccessToken: "tok-at-mcp"}}, true
	a.mu.Unlock()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: &Transport{Base: base, Auth: a}}
	resp, err := hc.Post(mcp.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrOtherOrigin) {
		t.Errorf("err = %v, want ErrOtherOrigin", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin received %d requests", n)
	}
}
