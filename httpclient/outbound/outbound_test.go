package outbound

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// target counts the requests it receives, and those carrying a credential.
type target struct {
	srv                *httptest.Server
	requests, withCred atomic.Int32
}

func newTarget(t *testing.T, tls bool) *target {
	tg := &target{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.requests.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			tg.withCred.Add(1)
		}
		io.WriteString(w, "reached")
	})
	if tls {
		tg.srv = httptest.NewTLSServer(h)
	} else {
		tg.srv = httptest.NewServer(h)
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

// redirector answers /go with status to location, and /here with 200 and
// the request body.
func redirector(t *testing.T, tls bool, status int, location func() string) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/here" {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("Authorization"), b)
			return
		}
		http.Redirect(w, r, location(), status)
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func send(t *testing.T, hc *http.Client, method, u string) (string, error) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret-token")
	req.Header.Set("X-Api-Key", "api-key-value")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

// TestCrossOriginRefused: every redirect status, GET and POST, to another
// port of the same host: the target gets no request at all, and the
// error names the target without its query.
func TestCrossOriginRefused(t *testing.T) {
	tg := newTarget(t, false)
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			src := redirector(t, false, status, func() string { return tg.srv.URL + "/x?api_key=hidden" })
			hc := Client(src.Client())
			_, err := send(t, hc, method, src.URL+"/go")
			var re *RedirectError
			if !errors.As(err, &re) || !errors.Is(err, ErrRedirect) {
				t.Fatalf("%d %s: err = %v, want a RedirectError", status, method, err)
			}
			if re.Status != status || re.To != tg.srv.URL+"/x" || strings.Contains(re.Error(), "hidden") {
				t.Errorf("%d %s: %+v", status, method, re)
			}
			src.Client().CloseIdleConnections()
		}
	}
	if n := tg.requests.Load(); n != 0 {
		t.Errorf("the other origin received %d requests (%d with credentials)", n, tg.withCred.Load())
	}
}

// TestHTTPSToHTTPRefused: an https server redirecting to plain http on
// the same host is refused, whatever the request.
func TestHTTPSToHTTPRefused(t *testing.T) {
	tg := newTarget(t, false)
	for _, status := range []int{301, 302, 307, 308} {
		src := redirector(t, true, status, func() string { return tg.srv.URL + "/x" })
		_, err := send(t, Client(src.Client()), http.MethodGet, src.URL+"/go")
		var re *RedirectError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "leaves https") {
			t.Errorf("%d: err = %v, want the https refusal", status, err)
		}
		src.Client().CloseIdleConnections()
	}
	if n := tg.requests.Load(); n != 0 {
		t.Errorf("the http target received %d requests", n)
	}
}

// TestSameOrigin: 307 and 308 keep a POST's method, body and headers;
// 301/302/303 on a POST are refused (they would drop the body); a GET
// follows all of them.
func TestSameOrigin(t *testing.T) {
	for _, status := range []int{307, 308} {
		var src *httptest.Server
		src = redirector(t, false, status, func() string { return src.URL + "/here" })
		got, err := send(t, Client(src.Client()), http.MethodPost, src.URL+"/go")
		if err != nil || got != `POST Bearer s3cret-token {"jsonrpc":"2.0","id":1,"method":"tools/list"}` {
			t.Errorf("%d POST: %q, %v", status, got, err)
		}
	}
	for _, status := range []int{301, 302, 303} {
		var src *httptest.Server
		src = redirector(t, false, status, func() string { return src.URL + "/here" })
		if _, err := send(t, Client(src.Client()), http.MethodPost, src.URL+"/go"); !errors.Is(err, ErrRedirect) {
			t.Errorf("%d POST: err = %v, want refused", status, err)
		}
		if got, err := send(t, Client(src.Client()), http.MethodGet, src.URL+"/go"); err != nil || got != "GET Bearer s3cret-token " {
			t.Errorf("%d GET: %q, %v", status, got, err)
		}
	}
}

// TestTooManyRedirects: a loop ends after 10 hops.
func TestTooManyRedirects(t *testing.T) {
	var src *httptest.Server
	src = redirector(t, false, 307, func() string { return src.URL + "/go" })
	if _, err := send(t, Client(nil), http.MethodGet, src.URL+"/go"); !errors.Is(err, ErrRedirect) {
		t.Errorf("err = %v", err)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// TestClientKeepsOwnCheck: the caller's own CheckRedirect still runs on
// the hops the policy allows.
func TestClientKeepsOwnCheck(t *testing.T) {
	var src *httptest.Server
	src = redirector(t, false, 307, func() string { return src.URL + "/here" })
	own := src.Client()
	own.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodGet, src.URL+"/go", nil)
	resp, err := Client(own).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 {
		t.Errorf("status %d, want the 307 itself", resp.StatusCode)
	}
	own.CloseIdleConnections()
}

func TestOrigin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://A.example/x", "https://a.example:443/y", true},
		{"http://a.example/", "http://a.example:80", true},
		{"http://a.example/", "https://a.example/", false},
		{"http://127.0.0.1:1/", "http://127.0.0.1:2/", false},
		{"https://a.example/", "https://b.a.example/", false},
		{"http://[::1]:8/", "http://[::1]:8/z", true},
	} {
		if got := SameOrigin(mustParse(t, c.a), mustParse(t, c.b)); got != c.same {
			t.Errorf("SameOrigin(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestScrub(t *testing.T) {
	s := SecretsOf("https://alice:pa%24ss@h.example/mcp?api_key=qsecret&x=1",
		http.Header{"Authorization": {"Bearer tok-123456"}, "X-Api-Key": {"hdr-secret"}, "X-Short": {"1"}})
	in := "refused https://alice:pa%24ss@h.example/mcp?api_key=qsecret: token tok-123456, key hdr-secret, pass pa$ss, 1 item"
	out := s.Scrub(in)
	for _, secret := range []string{"alice", "pa$ss", "pa%24ss", "qsecret", "tok-123456", "hdr-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survives: %s", secret, out)
		}
	}
	if !strings.Contains(out, "1 item") {
		t.Errorf("a short value was scrubbed: %s", out)
	}
}

func TestRedact(t *testing.T) {
	if got := RedactString("https://u:p@h.example:8443/mcp?k=v#f"); got != "https://h.example:8443/mcp" {
		t.Errorf("got %s", got)
	}
	if got := RedactString("http://%zz"); got != "<invalid URL>" {
		t.Errorf("got %s", got)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestLoopbackHost: the one loopback rule of the plain-http and
// loopback-listener checks (auth's browser-facing names add .localhost).
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"0.0.0.0": false, "example.com": false, "app.localhost": false, "": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
