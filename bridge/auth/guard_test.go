package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func admit(g *Guard, authz string) (*http.Request, *httptest.ResponseRecorder, int, string) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	w := httptest.NewRecorder()
	r, status, msg := g.Admit(w, r)
	return r, w, status, msg
}

// A Guard without credentials admits everyone as the anonymous principal;
// with static tokens it admits their holders under their names (or a
// hash prefix), refuses the rest with a challenge that says a static
// token is wanted, and keeps requiring a token when the token file is
// emptied.
func TestGuardStaticTokens(t *testing.T) {
	if r, _, status, _ := admit(NewGuard(nil, nil, nil), ""); r == nil || status != 0 || PrincipalOf(r) != (Principal{}) {
		t.Fatalf("open guard: %v %d", r, status)
	}

	g := NewGuard([]string{"tok-static"}, []NamedToken{{Name: "alice", Token: "tok-alice"}}, nil)
	r, _, _, _ := admit(g, "bearer  tok-alice ")
	if r == nil || PrincipalOf(r).String() != "alice" || !strings.HasPrefix(PrincipalOf(r).Key(), "token:") {
		t.Fatalf("alice: %v", r)
	}
	r, _, _, _ = admit(g, "Bearer tok-static")
	if p := PrincipalOf(r); r == nil || p.String() != p.Key()[:len("token:")+8] || strings.Contains(p.Key(), "tok-static") {
		t.Fatalf("static token's principal: %v", p)
	}

	for authz, want := range map[string]string{"": "offers no OAuth login", "Bearer nope": `error="invalid_token"`} {
		r, w, status, msg := admit(g, authz)
		if r != nil || status != http.StatusUnauthorized || msg != "Unauthorized: a valid bearer token is required" ||
			!strings.Contains(w.Header().Get("WWW-Authenticate"), want) {
			t.Errorf("%q: %v %d %q %q", authz, r, status, msg, w.Header().Get("WWW-Authenticate"))
		}
	}

	g.SetTokens(nil)
	if r, _, _, _ := admit(g, "Bearer tok-alice"); r != nil {
		t.Error("a token taken out of the file is still admitted")
	}
	if r, _, _, _ := admit(g, "Bearer tok-static"); r == nil {
		t.Error("the static token went with the file's")
	}
	if len(g.Tokens()) != 1 || g.Tokens()[0] != "tok-static" {
		t.Errorf("Tokens = %q", g.Tokens())
	}
	g = NewGuard(nil, []NamedToken{{Token: "t"}}, nil)
	g.SetTokens(nil)
	if r, _, _, _ := admit(g, ""); r != nil || !g.Required() {
		t.Error("an emptied token file opened the endpoint")
	}
}

// A static-token endpoint answers the OAuth login paths with a 404 that
// says a token is wanted; one with an Authenticator leaves them alone.
func TestGuardServeNoLogin(t *testing.T) {
	g := NewGuard([]string{"tok"}, nil, nil)
	for path, want := range map[string]bool{"/register": true, "/.well-known/oauth-authorization-server": true, "/other": false} {
		w := httptest.NewRecorder()
		if got := g.ServeNoLogin(w, httptest.NewRequest(http.MethodGet, path, nil)); got != want ||
			(want && (w.Code != 404 || !strings.Contains(w.Body.String(), "static bearer token"))) {
			t.Errorf("%s: %v %d %q", path, got, w.Code, w.Body)
		}
	}
	if NewGuard(nil, nil, nil).ServeNoLogin(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/register", nil)) {
		t.Error("an open endpoint answered the login path")
	}
}

// PrincipalSlot learns the principal a request was admitted as.
func TestPrincipalSlot(t *testing.T) {
	g := NewGuard(nil, []NamedToken{{Name: "bob", Token: "tok-bob"}}, nil)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer tok-bob")
	r, name := PrincipalSlot(r)
	if r, _, _ := g.Admit(httptest.NewRecorder(), r); r == nil || name() != "bob" {
		t.Errorf("slot = %q", name())
	}
}
