package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// groupAS is an authorization server with two protected MCP endpoints,
// /a/mcp and /b/mcp, each its own RFC 8707 resource. Access tokens are
// good for one resource; refresh tokens are rotated, and a used one coming
// back revokes the grant (as node-oidc-provider does).
type groupAS struct {
	srv *httptest.Server
	ttl int // access token lifetime, seconds

	mu         sync.Mutex
	authorizes [][]string          // each authorization request's resources
	codes      map[string][]string // code -> resources granted
	access     map[string]string   // access token -> resource
	refresh    map[string]bool     // refresh token -> used
	grants     map[string]int      // grant_type -> count
	revoked    bool
	n          int
}

func newGroupAS(t *testing.T, ttl int) *groupAS {
	g := &groupAS{ttl: ttl, codes: map[string][]string{}, access: map[string]string{}, refresh: map[string]bool{}, grants: map[string]int{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *groupAS) serve(w http.ResponseWriter, r *http.Request) {
	base := g.srv.URL
	g.mu.Lock()
	defer g.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/a/mcp" || p == "/b/mcp":
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if g.revoked || g.access[tok] != base+p {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource`+p+`"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	case strings.HasPrefix(p, "/.well-known/oauth-protected-resource/"):
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, base+strings.TrimPrefix(p, "/.well-known/oauth-protected-resource"), base)
	case p == "/.well-known/oauth-authorization-server":
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"code_challenge_methods_supported":["S256"],"scopes_supported":["offline_access"]}`,
			base, base+"/authorize", base+"/token", base+"/register")
	case p == "/register":
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"client_id":"group-client","token_endpoint_auth_method":"none"}`)
	case p == "/authorize":
		q := r.URL.Query()
		g.authorizes = append(g.authorizes, q["resource"])
		g.n++
		code := fmt.Sprintf("code-%d", g.n)
		g.codes[code] = q["resource"]
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	case p == "/token":
		_ = r.ParseForm()
		f := r.PostForm
		g.grants[f.Get("grant_type")]++
		res := f["resource"]
		var granted []string
		switch f.Get("grant_type") {
		case "authorization_code":
			granted = g.codes[f.Get("code")]
			delete(g.codes, f.Get("code"))
		case "refresh_token":
			rt := f.Get("refresh_token")
			used, ok := g.refresh[rt]
			if ok && used {
				g.revoked = true
			}
			if !ok || used || g.revoked {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			g.refresh[rt] = true
			granted = []string{base + "/a/mcp", base + "/b/mcp"}
		}
		if len(res) != 1 || !slices.Contains(granted, res[0]) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_target"}`)
			return
		}
		g.n++
		at, rt := fmt.Sprintf("at-%d", g.n), fmt.Sprintf("rt-%d", g.n)
		g.access[at] = res[0]
		g.refresh[rt] = false
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": g.ttl, "refresh_token": rt})
	default:
		http.NotFound(w, r)
	}
}

// groupMember is an Authorizer for endpoint path of as in gr, and a
// client using it.
func groupMember(t *testing.T, as *groupAS, gr *Group, store *Store, path string, now func() time.Time) *http.Client {
	t.Helper()
	browser, _ := testBrowser(t)
	a, err := New(Config{ServerURL: as.srv.URL + path, Browser: browser, Store: store, Timeout: time.Minute, Group: gr, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: &Transport{Base: tr, Auth: a}}
}

// Issue 26: two servers of one authorization server in a Group log in
// with one browser run, whose authorization request names both resources;
// each gets a token for its own resource (the second from the refresh
// token). Then tokens that expire at once make every request refresh, in
// turn for each server: the rotated refresh token reaches the other
// member, or the reuse would revoke the grant.
func TestGroupOneLoginForTwoServers(t *testing.T) {
	as := newGroupAS(t, 3600)
	gr := NewGroup()
	store := &Store{Dir: filepath.Join(t.TempDir(), "store")}
	hcA := groupMember(t, as, gr, store, "/a/mcp", nil)
	hcB := groupMember(t, as, gr, store, "/b/mcp", nil)
	_, blog := testBrowser(t)

	mustPost(t, hcA, as.srv.URL+"/a/mcp")
	mustPost(t, hcB, as.srv.URL+"/b/mcp")
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs %d, want 1", n)
	}
	as.mu.Lock()
	auths, grants := slices.Clone(as.authorizes), as.grants
	as.mu.Unlock()
	want := []string{as.srv.URL + "/a/mcp", as.srv.URL + "/b/mcp"}
	if len(auths) != 1 || !slices.Equal(auths[0], want) {
		t.Fatalf("authorization requests' resources %q, want one with %q", auths, want)
	}
	if grants["authorization_code"] != 1 || grants["refresh_token"] != 1 {
		t.Fatalf("grants %v, want one code exchange and one refresh", grants)
	}
	recs, err := store.List()
	if err != nil || len(recs) != 2 || recs[0].Grants[0].Token.RefreshToken != recs[1].Grants[0].Token.RefreshToken {
		t.Fatalf("store: %d records, %v; want two holding the same refresh token", len(recs), err)
	}
}

func TestGroupPassesRotatedRefreshTokens(t *testing.T) {
	as := newGroupAS(t, 3600)
	gr := NewGroup()
	store := &Store{Dir: filepath.Join(t.TempDir(), "store")}
	// The clock jumps two hours before each round: every token has
	// expired, so each member refreshes once per round.
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	hcA := groupMember(t, as, gr, store, "/a/mcp", now)
	hcB := groupMember(t, as, gr, store, "/b/mcp", now)
	_, blog := testBrowser(t)
	for range 3 {
		mu.Lock()
		clock = clock.Add(2 * time.Hour)
		mu.Unlock()
		mustPost(t, hcA, as.srv.URL+"/a/mcp")
		mustPost(t, hcB, as.srv.URL+"/b/mcp")
	}
	as.mu.Lock()
	revoked, grants := as.revoked, as.grants
	as.mu.Unlock()
	if n := browserRuns(t, blog); n != 1 || revoked || grants["refresh_token"] < 5 {
		t.Fatalf("browser runs %d, revoked %v, grants %v; want 1, false, at least 5 refreshes", n, revoked, grants)
	}
}
