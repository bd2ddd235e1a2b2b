package oauth

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// setup returns an Authorizer for f's endpoint with the test browser and a
// store in a temporary directory, plus an HTTP client using its Transport.
func setup(t *testing.T, f *fakeAS, mod func(*Config)) (*Authorizer, *http.Client, string) {
	t.Helper()
	browser, log := testBrowser(t)
	cfg := Config{
		ServerURL: f.mcp(),
		Browser:   browser,
		Store:     &Store{Dir: filepath.Join(t.TempDir(), "store")},
		Timeout:   time.Minute,
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return a, &http.Client{Transport: &Transport{Base: tr, Auth: a}}, log
}

func post(t *testing.T, hc *http.Client, u string) (int, error) {
	t.Helper()
	resp, err := hc.Post(u, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func mustPost(t *testing.T, hc *http.Client, u string) {
	t.Helper()
	code, err := post(t, hc, u)
	if err != nil || code != 200 {
		t.Fatalf("POST %s: %d %v", u, code, err)
	}
}

// The whole browser login with dynamic registration, then: the stored
// token reused by a new Authorizer without a browser, an expired access
// token refreshed without a browser (the rotated refresh token saved), and
// a revoked refresh token leading to a new login.
func TestLoginRefreshRelogin(t *testing.T) {
	f := newFakeAS(t)
	f.refresh, f.rotate = true, true
	f.scopesSup = []string{"mcp", "offline_access"}
	f.wwwScope = "mcp"
	var logs bytes.Buffer
	a, hc, blog := setup(t, f, func(c *Config) { c.Logger = zerolog.New(&logs).Level(zerolog.TraceLevel) })

	mustPost(t, hc, f.mcp())
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs = %d, want 1", n)
	}
	f.locked(func() {
		q := f.authorizes[0]
		if q.Get("resource") != f.mcp() || q.Get("scope") != "mcp offline_access" {
			t.Errorf("authorization request resource=%q scope=%q", q.Get("resource"), q.Get("scope"))
		}
		if !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || f.registrations != 1 {
			t.Errorf("redirect_uri %q, registrations %d", q.Get("redirect_uri"), f.registrations)
		}
	})

	// Files: 0700 directory, 0600 file.
	dir := a.cfg.Store.Dir
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store dir: %v %v", fi.Mode(), err)
	}
	ents, _ := filepath.Glob(filepath.Join(dir, "server-*.json"))
	if len(ents) != 1 {
		t.Fatalf("store files %v", ents)
	}
	if fi, _ := os.Stat(ents[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode())
	}

	// A second Authorizer (another run) uses the stored token: no browser.
	_, hc2, _ := setup(t, f, func(c *Config) { c.Store = a.cfg.Store; c.Browser = []string{"false"} })
	mustPost(t, hc2, f.mcp())

	// Access token gone: refreshed, no browser.
	f.expireAccess()
	mustPost(t, hc, f.mcp())
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs after refresh = %d, want 1", n)
	}
	rec, _ := a.cfg.Store.Load(a.Server())
	var rt string
	f.locked(func() {
		last := f.tokenForms[len(f.tokenForms)-1]
		if last.Get("grant_type") != "refresh_token" || last.Get("resource") != f.mcp() {
			t.Errorf("last token request %v", last.Get("grant_type"))
		}
		for k := range f.refreshTokens {
			rt = k
		}
	})
	if rec.Grants[0].Token.RefreshToken != rt {
		t.Errorf("stored refresh token is not the rotated one")
	}

	// Everything revoked: the refresh fails, a new browser login follows.
	f.revoke()
	mustPost(t, hc, f.mcp())
	if n := browserRuns(t, blog); n != 2 {
		t.Fatalf("browser runs after revocation = %d, want 2", n)
	}
	f.locked(func() {
		if f.registrations != 1 {
			t.Errorf("registrations = %d: the stored registration should be reused", f.registrations)
		}
	})

	// No token value in any log line.
	f.locked(func() {
		for tok := range f.tokens {
			if strings.Contains(logs.String(), tok) {
				t.Errorf("log contains an access token")
			}
		}
	})
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("log contains a token:\n%s", logs.String())
	}
}

// Requests that arrive together (and during the login) share one login.
func TestConcurrentRequestsOneLogin(t *testing.T) {
	f := newFakeAS(t)
	_, hc, blog := setup(t, f, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := post(t, hc, f.mcp())
			if err == nil && code != 200 {
				err = errors.New(http.StatusText(code))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs = %d, want 1", n)
	}
}

// Two Authorizers on one store (two processes) started together: the
// file lock makes the second wait and reuse the first one's token.
func TestTwoProcessesOneLogin(t *testing.T) {
	f := newFakeAS(t)
	a1, hc1, blog := setup(t, f, nil)
	_, hc2, _ := setup(t, f, func(c *Config) { c.Store = a1.cfg.Store })
	var wg sync.WaitGroup
	for _, hc := range []*http.Client{hc1, hc2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustPost(t, hc, f.mcp())
		}()
	}
	wg.Wait()
	if n := browserRuns(t, blog); n != 1 {
		t.Fatalf("browser runs = %d, want 1", n)
	}
}

// RFC 9207: a mismatched iss is refused before the code is used; a
// missing iss is refused when the metadata promises one.
func TestIssuerCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		supported bool
		iss       string
		ok        bool
	}{
		{"match", true, "SELF", true},
		{"mismatch", false, "https://evil.example", false},
		{"missing-but-promised", true, "", false},
		{"absent-not-promised", false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.issSupported = tc.supported
			f.sendIss = strings.ReplaceAll(tc.iss, "SELF", f.url()+"/as")
			_, hc, _ := setup(t, f, nil)
			code, err := post(t, hc, f.mcp())
			if tc.ok != (err == nil && code == 200) {
				t.Fatalf("got %d %v", code, err)
			}
			if !tc.ok {
				if !errors.Is(err, ErrLogin) || !strings.Contains(err.Error(), "iss") {
					t.Fatalf("error %v", err)
				}
				f.locked(func() {
					for _, form := range f.tokenForms {
						if form.Get("grant_type") == "authorization_code" {
							t.Errorf("the code went to the token endpoint")
						}
					}
				})
			}
		})
	}
}

// A 403 insufficient_scope re-authorizes with the union of scopes; a
// server that keeps refusing gets at most MaxStepUps re-authorizations.
func TestStepUp(t *testing.T) {
	f := newFakeAS(t)
	f.wwwScope = "read"
	f.needScope = "write"
	_, hc, blog := setup(t, f, nil)
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if len(f.authorizes) != 2 || f.authorizes[1].Get("scope") != "read write" {
			t.Fatalf("authorizations %v", f.authorizes)
		}
	})

	g := newFakeAS(t)
	g.needScope = "admin"
	g.locked(func() {}) // the AS never grants admin: scopes are dropped below
	before := browserRuns(t, blog)
	_, hc2, _ := setup(t, g, nil)
	g.locked(func() { g.wwwScope = "" })
	// The AS strips "admin" from every grant.
	g.srv.Config.Handler = stripScope(g, "admin")
	code, err := post(t, hc2, g.mcp())
	if err != nil || code != 403 {
		t.Fatalf("got %d %v, want the 403", code, err)
	}
	if n := browserRuns(t, blog) - before; n != 1+DefaultMaxStepUps {
		t.Errorf("logins = %d, want %d", n, 1+DefaultMaxStepUps)
	}
}

// signalWriter closes ch at its first write.
func signalWriter(ch chan struct{}) io.Writer {
	var once sync.Once
	return writerFunc(func(p []byte) (int, error) {
		once.Do(func() { close(ch) })
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// stripScope wraps f so that the token endpoint never grants scope s.
func stripScope(f *fakeAS, s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/as/token" {
			f.mu.Lock()
			for k, v := range f.codeScope {
				f.codeScope[k] = strings.TrimSpace(strings.ReplaceAll(v, s, ""))
			}
			f.mu.Unlock()
		}
		f.serve(w, r)
	})
}

// A login nobody completes ends at the timeout with an error naming the
// login, and a request waiting for it gets that error, not a second login.
func TestLoginTimeout(t *testing.T) {
	f := newFakeAS(t)
	t.Setenv("OAUTH_TEST_BROWSER_IDLE", "1")
	_, hc, _ := setup(t, f, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	_, err := post(t, hc, f.mcp())
	var le *LoginError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "--oauth-timeout") {
		t.Fatalf("error %v, want a LoginError about the timeout", err)
	}
}

// No dynamic registration and no client id: a clear error; with a
// pre-registered client id and secret, client_secret_basic is used.
func TestPreRegistered(t *testing.T) {
	f := newFakeAS(t)
	f.noDCR = true
	_, hc, _ := setup(t, f, nil)
	if _, err := post(t, hc, f.mcp()); err == nil || !strings.Contains(err.Error(), "--oauth-client-id") {
		t.Fatalf("error %v", err)
	}
	f.preClientID, f.preSecret = "pre id", "pre:secret"
	f.authMethods = []string{AuthClientSecretPost, AuthClientSecretBasic}
	_, hc, _ = setup(t, f, func(c *Config) { c.ClientID, c.ClientSecret = "pre id", "pre:secret" })
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if got := f.tokenAuth[len(f.tokenAuth)-1]; got != AuthClientSecretBasic {
			t.Errorf("auth method %s", got)
		}
	})
}

// A Client ID Metadata Document URL is the client_id when the server
// supports them; no registration happens.
func TestClientIDMetadataDocument(t *testing.T) {
	f := newFakeAS(t)
	f.cimd = true
	const doc = "https://client.example/mcp-bridge.json"
	_, hc, _ := setup(t, f, func(c *Config) { c.ClientMetadataURL = doc })
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if f.registrations != 0 || f.authorizes[0].Get("client_id") != doc {
			t.Errorf("registrations %d client_id %q", f.registrations, f.authorizes[0].Get("client_id"))
		}
	})
}

// --oauth-no-resource omits the resource parameter everywhere.
func TestNoResource(t *testing.T) {
	f := newFakeAS(t)
	_, hc, _ := setup(t, f, func(c *Config) { c.NoResource = true })
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if _, ok := f.authorizes[0]["resource"]; ok {
			t.Error("resource sent")
		}
		for _, form := range f.tokenForms {
			if _, ok := form["resource"]; ok {
				t.Error("resource sent to the token endpoint")
			}
		}
	})
}

// Close during a login ends it promptly with a LoginError.
func TestCloseDuringLogin(t *testing.T) {
	f := newFakeAS(t)
	t.Setenv("OAUTH_TEST_BROWSER_IDLE", "1")
	prompted := make(chan struct{})
	a, hc, _ := setup(t, f, func(c *Config) { c.Prompt = signalWriter(prompted) })
	done := make(chan error, 1)
	go func() {
		_, err := post(t, hc, f.mcp())
		done <- err
	}()
	<-prompted // the login is under way
	a.Close()
	if err := <-done; !errors.Is(err, ErrLogin) {
		t.Fatalf("error %v", err)
	}
}

// An authorization server that forgot the dynamic registration answers the
// refresh with invalid_client: the client registers again and logs in.
func TestForgottenRegistration(t *testing.T) {
	f := newFakeAS(t)
	f.refresh = true
	f.authMethods = []string{AuthClientSecretBasic}
	_, hc, _ := setup(t, f, nil)
	mustPost(t, hc, f.mcp())
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
}

// A stored token past its expiry is refreshed before the request is sent:
// the server never sees the expired token, and no browser runs.
func TestProactiveRefresh(t *testing.T) {
	f := newFakeAS(t)
	f.refresh = true
	now := time.Now()
	clock := func() time.Time { return now }
	var mu sync.Mutex
	_, hc, blog := setup(t, f, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock() }
	})
	mustPost(t, hc, f.mcp())
	mu.Lock()
	now = now.Add(2 * time.Hour) // past expires_in 3600
	mu.Unlock()
	var before int
	f.locked(func() { before = len(f.tokenForms) })
	mustPost(t, hc, f.mcp())
	f.locked(func() {
		if len(f.tokenForms) != before+1 || f.tokenForms[before].Get("grant_type") != "refresh_token" {
			t.Errorf("token requests after expiry: %d", len(f.tokenForms)-before)
		}
	})
	if n := browserRuns(t, blog); n != 1 {
		t.Errorf("browser runs = %d, want 1", n)
	}
}
