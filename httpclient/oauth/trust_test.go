package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// An authorization request that asks for offline_access carries
// prompt=consent (OpenID Connect Core §11); one that does not, no prompt.
func TestPromptConsentWithOfflineAccess(t *testing.T) {
	for _, offline := range []bool{true, false} {
		t.Run(fmt.Sprint("offline=", offline), func(t *testing.T) {
			f := newFakeAS(t)
			f.wwwScope = "mcp"
			if offline {
				f.scopesSup = []string{"mcp", "offline_access"}
			}
			_, hc, _ := setup(t, f, nil)
			mustPost(t, hc, f.mcp())
			f.locked(func() {
				q := f.authorizes[0]
				if got, want := q.Get("prompt"), map[bool]string{true: "consent", false: ""}[offline]; got != want {
					t.Errorf("prompt = %q with scope %q, want %q", got, q.Get("scope"), want)
				}
			})
		})
	}
}

// The registration names the scope the login will ask for, from each of
// the three sources; an authorization server that requires it (and holds
// logins to it, as Hydra does) accepts the registration and the login.
func TestRegistrationNamesScope(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*fakeAS, *Config)
		want string
	}{
		{"challenge", func(f *fakeAS, _ *Config) { f.wwwScope = "mcp:read" }, "mcp:read offline_access"},
		{"scopes_supported", func(f *fakeAS, _ *Config) { f.prmScopes = []string{"a", "b"} }, "a b offline_access"},
		{"flag", func(f *fakeAS, c *Config) { f.wwwScope = "ignored"; c.Scopes = []string{"x", "y"} }, "x y offline_access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.regScopeReq = true
			f.refresh = true
			f.scopesSup = []string{"offline_access"}
			_, hc, _ := setup(t, f, func(c *Config) { tc.set(f, c) })
			mustPost(t, hc, f.mcp())
			f.locked(func() {
				if f.registrations != 1 || f.regRequests[0]["scope"] != tc.want {
					t.Errorf("registrations %d, scope %v, want %q", f.registrations, f.regRequests[0]["scope"], tc.want)
				}
			})
		})
	}
}

// The authorization server forgot the registered client (a reset) and
// there is no refresh token to tell: the next login checks the stored
// registration, registers once more and logs in once, rather than showing
// the server's invalid_client page until the login times out.
func TestForgottenRegistrationAtAuthorize(t *testing.T) {
	f := newFakeAS(t)
	var mu sync.Mutex
	now := time.Now()
	_, hc, blog := setup(t, f, func(c *Config) {
		c.Timeout = 5 * time.Second
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	mustPost(t, hc, f.mcp())
	mu.Lock()
	now = now.Add(knownFor) // the token issued at login no longer vouches for the client
	mu.Unlock()
	f.locked(func() {
		f.clients = map[string]string{}
		f.tokens = map[string][]string{}
	})
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if f.registrations != 2 {
			t.Errorf("registrations = %d, want 2", f.registrations)
		}
	})
	if n := browserRuns(t, blog); n != 2 {
		t.Errorf("browser runs = %d, want 2 (one a login)", n)
	}
}

// A login that fails keeps its registration: the next login uses it (the
// server still knows it), it does not register another client.
func TestFailedLoginKeepsRegistration(t *testing.T) {
	for _, store := range []bool{true, false} {
		t.Run(fmt.Sprint("store=", store), func(t *testing.T) {
			f := newFakeAS(t)
			f.denyNext = 2
			_, hc, blog := setup(t, f, func(c *Config) {
				if !store {
					c.Store = nil
				}
			})
			for range 2 {
				if _, err := post(t, hc, f.mcp()); !errors.Is(err, ErrLogin) || !strings.Contains(err.Error(), "access_denied") {
					t.Fatalf("error %v, want the refusal", err)
				}
			}
			mustPost(t, hc, f.mcp())
			f.locked(func() {
				if f.registrations != 1 {
					t.Errorf("registrations = %d after two failed logins and one good one, want 1", f.registrations)
				}
			})
			if n := browserRuns(t, blog); n != 3 {
				t.Errorf("browser runs = %d, want 3", n)
			}
		})
	}
}

// A server that answers 401 to every token, even the one a login just
// gave: at most one browser login per ReloginInterval, and the requests in
// between fail at once with an error that says why.
func TestRefusedFreshTokenOneLogin(t *testing.T) {
	f := newFakeAS(t)
	f.refuseAll = true
	var mu sync.Mutex
	now := time.Now()
	_, hc, blog := setup(t, f, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	var last error
	for i := range 9 {
		code, err := post(t, hc, f.mcp())
		if err == nil && code != http.StatusUnauthorized {
			t.Fatalf("request %d: HTTP %d", i, code)
		}
		if i > 0 && err == nil {
			t.Fatalf("request %d: the 401 again rather than an error", i)
		}
		last = err
	}
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs = %d for 9 requests, want 1", n)
	}
	if !errors.Is(last, ErrLogin) || !strings.Contains(last.Error(), "refused the token of the browser login") || !strings.Contains(last.Error(), "no longer valid") {
		t.Fatalf("error %v", last)
	}
	mu.Lock()
	now = now.Add(ReloginInterval + time.Second)
	mu.Unlock()
	_, _ = post(t, hc, f.mcp())
	if n := browserRuns(t, blog); n != 2 {
		t.Fatalf("browser runs after the interval = %d, want 2", n)
	}
}

// serve with static tokens: its 401 has no resource_metadata but says
// what it wants; the login error repeats that instead of the 404 of the
// 2025-03-26 default registration endpoint, and no browser opens.
func TestStaticTokenServerHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-bridge", error_description="this server takes a static bearer token and offers no OAuth login"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	browser, blog := testBrowser(t)
	a, err := New(Config{ServerURL: srv.URL + "/mcp", Browser: browser, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err = post(t, &http.Client{Transport: &Transport{Base: tr, Auth: a}}, srv.URL+"/mcp")
	if err == nil || !strings.Contains(err.Error(), "this server takes a static bearer token") || strings.Contains(err.Error(), "404") {
		t.Fatalf("error %v", err)
	}
	if n := browserRuns(t, blog); n != 0 {
		t.Errorf("browser runs = %d", n)
	}
}

// The token store refuses a directory others can write to (an existing
// 0777 one is not silently used) and a store file that is a symbolic link.
func TestStoreRefusesUnsafe(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits and symbolic links: Unix semantics")
	}
	const server = "https://mcp.example/mcp"
	t.Run("0777 directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		s := &Store{Dir: dir}
		if _, err := s.Load(server); !errors.Is(err, ErrStoreUnsafe) {
			t.Errorf("Load: %v", err)
		}
		if err := s.Save(&Record{Server: server}); !errors.Is(err, ErrStoreUnsafe) {
			t.Errorf("Save: %v", err)
		}
		if _, err := s.Lock(t.Context(), server); !errors.Is(err, ErrStoreUnsafe) {
			t.Errorf("Lock: %v", err)
		}
		if _, err := s.List(); !errors.Is(err, ErrStoreUnsafe) {
			t.Errorf("List: %v", err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("files written: %v", ents)
		}
	})
	t.Run("symlinked file", func(t *testing.T) {
		s := &Store{Dir: filepath.Join(t.TempDir(), "store")}
		if err := s.Save(&Record{Server: server, Grants: []Grant{{Issuer: "https://mine.example"}}}); err != nil {
			t.Fatal(err)
		}
		planted := filepath.Join(t.TempDir(), "planted.json")
		b := fmt.Appendf(nil, `{"server":%q,"grants":[{"issuer":"https://attacker.example","client":{"client_id":"x","source":"dynamic"},"token":{"access_token":"planted"}}]}`, server)
		if err := os.WriteFile(planted, b, 0o600); err != nil {
			t.Fatal(err)
		}
		file := s.base(server) + ".json"
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(planted, file); err != nil {
			t.Fatal(err)
		}
		if rec, err := s.Load(server); !errors.Is(err, ErrStoreUnsafe) {
			t.Errorf("Load of a symlink: %v %+v", err, rec)
		}
		if recs, _ := s.List(); len(recs) != 0 {
			t.Errorf("List read the symlink: %+v", recs)
		}
	})
}

// Authorization server endpoints on plain http at a non-loopback host are
// refused before anything is sent to them. The test's HTTP client sends
// every non-loopback request to a recording proxy on loopback: it must
// record nothing, and no browser opens.
func TestInsecureAuthorizationServer(t *testing.T) {
	var mu sync.Mutex
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.Method+" "+r.URL.String())
		mu.Unlock()
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	proxyTr := &http.Transport{Proxy: func(r *http.Request) (*url.URL, error) {
		if outbound.LoopbackHost(r.URL.Hostname()) {
			return nil, nil
		}
		return pu, nil
	}}
	defer proxyTr.CloseIdleConnections()

	const far = "http://as.example.test"
	for _, tc := range []struct {
		name   string
		issuer func(base string) string // authorization_servers entry
		md     func(base string) map[string]any
	}{
		{"issuer", func(string) string { return far }, nil},
		{"endpoints", func(base string) string { return base + "/as" }, func(base string) map[string]any {
			return map[string]any{"issuer": base + "/as", "authorization_endpoint": far + "/authorize", "token_endpoint": far + "/token",
				"registration_endpoint": far + "/register", "code_challenge_methods_supported": []string{"S256"}}
		}},
		{"registration", func(base string) string { return base + "/as" }, func(base string) map[string]any {
			return map[string]any{"issuer": base + "/as", "authorization_endpoint": base + "/as/authorize", "token_endpoint": base + "/as/token",
				"registration_endpoint": far + "/register", "code_challenge_methods_supported": []string{"S256"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				base := srv.URL
				switch r.URL.Path {
				case "/mcp":
					w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
					w.WriteHeader(http.StatusUnauthorized)
				case "/.well-known/oauth-protected-resource/mcp":
					writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{tc.issuer(base)}})
				case "/.well-known/oauth-authorization-server/as":
					writeJSON(w, tc.md(base))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			browser, blog := testBrowser(t)
			a, err := New(Config{ServerURL: srv.URL + "/mcp", Browser: browser, Timeout: time.Minute, HTTPClient: &http.Client{Transport: proxyTr}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			_, err = post(t, &http.Client{Transport: &Transport{Base: proxyTr, Auth: a}}, srv.URL+"/mcp")
			if err == nil || !strings.Contains(err.Error(), "neither https nor on a loopback host") {
				t.Fatalf("error %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(proxied) != 0 {
				t.Errorf("sent to the non-loopback http server: %q", proxied)
			}
			if n := browserRuns(t, blog); n != 0 {
				t.Errorf("browser runs = %d", n)
			}
		})
	}
}

// Protected resource metadata naming a parent of the endpoint is not
// used (RFC 9728 §3.3): no registration, no browser.
func TestResourceMetadataParentRefused(t *testing.T) {
	f := newFakeAS(t)
	f.prmResource = f.url() // the origin, fetched from the path-aware URL
	_, hc, blog := setup(t, f, nil)
	if _, err := post(t, hc, f.mcp()); err == nil || !strings.Contains(err.Error(), "identical") {
		t.Fatalf("error %v", err)
	}
	f.locked(func() {
		if f.registrations != 0 {
			t.Errorf("registrations = %d", f.registrations)
		}
	})
	if n := browserRuns(t, blog); n != 0 {
		t.Errorf("browser runs = %d", n)
	}
}

// The logins that follow a login at once (step-ups) do not check the
// registration the token endpoint just vouched for; a later login does,
// with a made-up refresh token, never a made-up code (which a server
// auditing PKCE would count as a failure).
func TestRegistrationCheck(t *testing.T) {
	f := newFakeAS(t)
	f.wwwScope = "read"
	f.needScope = "write"
	var mu sync.Mutex
	now := time.Now()
	_, hc, _ := setup(t, f, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	mustPost(t, hc, f.mcp()) // a login and a step-up
	checks := func() (refresh, code int) {
		f.locked(func() {
			for _, form := range f.tokenForms {
				if strings.HasPrefix(form.Get("refresh_token")+form.Get("code"), "mcp-bridge-registration-check-") {
					if form.Get("grant_type") == "refresh_token" {
						refresh++
					} else {
						code++
					}
				}
			}
		})
		return
	}
	if r, c := checks(); r+c != 0 {
		t.Fatalf("registration checks during the step-up: %d", r+c)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	f.revoke()
	mustPost(t, hc, f.mcp())
	if r, c := checks(); r != 1 || c != 0 {
		t.Fatalf("registration checks at a later login: %d with a refresh token, %d with a code; want 1, 0", r, c)
	}
	f.locked(func() {
		// The step-up asked for more than the registered scope "read":
		// one registration for "read write", then reused.
		if f.registrations != 2 {
			t.Errorf("registrations = %d, want 2", f.registrations)
		}
	})
}
