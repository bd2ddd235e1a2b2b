package oauth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// fakeClock is the device grant's clock and wait: a wait returns at once,
// records its duration and moves the clock on by it, so that intervals
// are checked without being waited out.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return nil
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// deviceRun is an Authorizer with the device grant against f, a fake
// clock, and what it printed and logged.
type deviceRun struct {
	a      *Authorizer
	hc     *http.Client
	blog   string
	clock  *fakeClock
	prompt *bytes.Buffer
	logs   *bytes.Buffer
}

func setupDevice(t *testing.T, f *fakeAS, mod func(*Config)) *deviceRun {
	t.Helper()
	f.device = true
	r := &deviceRun{clock: &fakeClock{t: time.Unix(1_800_000_000, 0)}, prompt: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	r.a, r.hc, r.blog = setup(t, f, func(c *Config) {
		c.Grant = GrantDeviceCode
		c.Now = r.clock.now
		c.Prompt = r.prompt
		c.Logger = zerolog.New(r.logs).Level(zerolog.TraceLevel)
		if mod != nil {
			mod(c)
		}
	})
	r.a.sleep = r.clock.sleep // before any request: nothing reads it yet
	return r
}

// noDeviceCode checks that no device code reached the prompt or the logs.
func (r *deviceRun) noDeviceCode(t *testing.T) {
	t.Helper()
	if strings.Contains(r.prompt.String(), "SECRETDEVICE") || strings.Contains(r.logs.String(), "SECRETDEVICE") {
		t.Errorf("a device code was printed or logged:\nprompt:\n%s\nlogs:\n%s", r.prompt, r.logs)
	}
	if strings.Contains(r.logs.String(), "SECRETTOKEN") || strings.Contains(r.logs.String(), "SECRETREFRESH") {
		t.Errorf("a token was logged:\n%s", r.logs)
	}
}

func durations(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, n := range s {
		out[i] = time.Duration(n) * time.Second
	}
	return out
}

// The device grant end to end: a registration naming the device grant and
// no redirect URI, the device authorization request with scope and
// resource, the verification URI (plain and complete) and user code for
// the person, polls at the server's interval while authorization_pending,
// the token stored and later refreshed without a second device login. No
// browser runs; the device code is never printed or logged.
func TestDeviceCodePendingThenSuccess(t *testing.T) {
	f := newFakeAS(t)
	f.refresh = true
	f.scopesSup = []string{"mcp", "offline_access"}
	f.wwwScope = "mcp"
	f.deviceInterval = 3
	f.devicePolls = []string{"authorization_pending", "authorization_pending"}
	r := setupDevice(t, f, nil)

	mustPost(t, r.hc, f.mcp())
	if got, want := r.clock.recorded(), durations(3, 3, 3); !slices.Equal(got, want) {
		t.Errorf("waits before the polls %v, want %v", got, want)
	}
	if n := browserRuns(t, r.blog); n != 0 {
		t.Errorf("browser runs = %d, want 0", n)
	}
	f.locked(func() {
		if len(f.regRequests) != 1 {
			t.Fatalf("registrations %d", len(f.regRequests))
		}
		reg := f.regRequests[0]
		if gt, _ := reg["grant_types"].([]any); !slices.Contains(gt, any(deviceGrantType)) || !slices.Contains(gt, any("refresh_token")) || slices.Contains(gt, any("authorization_code")) {
			t.Errorf("registered grant_types %v", reg["grant_types"])
		}
		if ru, _ := reg["redirect_uris"].([]any); len(ru) != 0 {
			t.Errorf("registered redirect_uris %v", reg["redirect_uris"])
		}
		if len(f.deviceAuths) != 1 || len(f.authorizes) != 0 {
			t.Fatalf("device authorizations %d, authorization requests %d", len(f.deviceAuths), len(f.authorizes))
		}
		da := f.deviceAuths[0]
		if da.Get("client_id") != "client-1" || da.Get("scope") != "mcp offline_access" || da.Get("resource") != f.mcp() {
			t.Errorf("device authorization request %v", da)
		}
		if f.devicePollN != 3 {
			t.Errorf("polls %d, want 3", f.devicePollN)
		}
	})
	p := r.prompt.String()
	for _, want := range []string{f.url() + "/as/activate\n", "enter the code: USER-", f.url() + "/as/activate?user_code=USER-"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}

	// The access token expires: refreshed, no second device login.
	f.expireAccess()
	mustPost(t, r.hc, f.mcp())
	f.locked(func() {
		if len(f.deviceAuths) != 1 || f.tokenForms[len(f.tokenForms)-1].Get("grant_type") != "refresh_token" {
			t.Errorf("device authorizations %d after the expiry; last grant %q", len(f.deviceAuths), f.tokenForms[len(f.tokenForms)-1].Get("grant_type"))
		}
	})
	rec, _ := r.a.cfg.Store.Load(r.a.Server())
	if g := rec.latest(); g == nil || g.Token.RefreshToken == "" || g.Client.Source != "dynamic" {
		t.Errorf("stored grant %+v", g)
	}
	r.noDeviceCode(t)
}

// slow_down adds 5 s to the interval for that and every later poll
// (RFC 8628 §3.5); without an interval in the response the first one is
// 5 s.
func TestDeviceCodeSlowDown(t *testing.T) {
	f := newFakeAS(t)
	f.devicePolls = []string{"authorization_pending", "slow_down", "authorization_pending", "slow_down", "authorization_pending"}
	r := setupDevice(t, f, nil)
	mustPost(t, r.hc, f.mcp())
	if got, want := r.clock.recorded(), durations(5, 5, 10, 10, 15, 15); !slices.Equal(got, want) {
		t.Errorf("waits before the polls %v, want %v", got, want)
	}
	r.noDeviceCode(t)
}

// access_denied ends the login with an error that says so, and no second
// device authorization.
func TestDeviceCodeAccessDenied(t *testing.T) {
	f := newFakeAS(t)
	f.devicePolls = []string{"authorization_pending", "access_denied"}
	r := setupDevice(t, f, nil)
	_, err := post(t, r.hc, f.mcp())
	var le *LoginError
	if !errors.As(err, &le) || !errors.Is(le.Cause(), ErrDeviceDenied) || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("error %v, want a LoginError with ErrDeviceDenied", err)
	}
	f.locked(func() {
		if len(f.deviceAuths) != 1 || f.devicePollN != 2 {
			t.Errorf("device authorizations %d, polls %d; want 1, 2", len(f.deviceAuths), f.devicePollN)
		}
	})
	r.noDeviceCode(t)
}

// expired_token: one new device authorization, which may succeed; when it
// expires too, the login fails — no third code. The response's expires_in
// ends the polling the same way when the server keeps saying pending.
func TestDeviceCodeExpired(t *testing.T) {
	t.Run("again once, then approved", func(t *testing.T) {
		f := newFakeAS(t)
		f.devicePolls = []string{"authorization_pending", "expired_token"}
		r := setupDevice(t, f, nil)
		mustPost(t, r.hc, f.mcp())
		f.locked(func() {
			if len(f.deviceAuths) != 2 || f.devicePollN != 3 {
				t.Errorf("device authorizations %d, polls %d; want 2, 3", len(f.deviceAuths), f.devicePollN)
			}
		})
		if n := strings.Count(r.prompt.String(), "enter the code"); n != 2 {
			t.Errorf("codes shown %d, want 2", n)
		}
		r.noDeviceCode(t)
	})
	t.Run("expired_token twice", func(t *testing.T) {
		f := newFakeAS(t)
		f.deviceAlways = "expired_token"
		r := setupDevice(t, f, nil)
		_, err := post(t, r.hc, f.mcp())
		var le *LoginError
		if !errors.As(err, &le) || !errors.Is(le.Cause(), ErrDeviceExpired) || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("error %v, want a LoginError with ErrDeviceExpired, twice", err)
		}
		f.locked(func() {
			if len(f.deviceAuths) != 2 || f.devicePollN != 2 {
				t.Errorf("device authorizations %d, polls %d; want 2, 2", len(f.deviceAuths), f.devicePollN)
			}
		})
		// The host's next request does not start a third one at once
		// either: the failed login is its answer.
		r.noDeviceCode(t)
	})
	t.Run("expires_in passes", func(t *testing.T) {
		f := newFakeAS(t)
		f.deviceAlways = "authorization_pending"
		f.deviceExpiresIn = 12
		r := setupDevice(t, f, nil)
		_, err := post(t, r.hc, f.mcp())
		if !errors.Is(err, ErrLogin) || !strings.Contains(err.Error(), "expires_in") {
			t.Fatalf("error %v", err)
		}
		// 5 s, 10 s: polls; 15 s: past 12 s, no poll. Twice.
		if got, want := r.clock.recorded(), durations(5, 5, 5, 5, 5, 5); !slices.Equal(got, want) {
			t.Errorf("waits %v, want %v", got, want)
		}
		f.locked(func() {
			if len(f.deviceAuths) != 2 || f.devicePollN != 4 {
				t.Errorf("device authorizations %d, polls %d; want 2, 4", len(f.deviceAuths), f.devicePollN)
			}
		})
	})
}

// An authorization server without a device_authorization_endpoint: a
// clear error, no registration.
func TestDeviceCodeNotOffered(t *testing.T) {
	f := newFakeAS(t)
	r := setupDevice(t, f, nil)
	f.locked(func() { f.device = false })
	_, err := post(t, r.hc, f.mcp())
	if err == nil || !strings.Contains(err.Error(), "device_authorization_endpoint") {
		t.Fatalf("error %v", err)
	}
	f.locked(func() {
		if f.registrations != 0 {
			t.Errorf("registrations %d", f.registrations)
		}
	})
}

// The https-except-loopback rule covers the device authorization
// endpoint: metadata naming a plain-http one elsewhere is refused.
func TestDeviceEndpointInsecure(t *testing.T) {
	md := `{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","device_authorization_endpoint":"%s"}`
	for ep, ok := range map[string]bool{"https://as.example/device": true, "http://127.0.0.1:9/device": true, "http://as.example/device": false} {
		m, err := ParseServerMetadata([]byte(strings.Replace(md, "%s", ep, 1)), "https://as.example")
		if ok && (err != nil || m.DeviceAuthorizationEndpoint != ep) {
			t.Errorf("%s: %v", ep, err)
		}
		if !ok && !errors.Is(err, ErrInsecure) {
			t.Errorf("%s: error %v, want ErrInsecure", ep, err)
		}
	}
}

func TestParseDeviceAuthorization(t *testing.T) {
	good := `{"device_code":"d","user_code":"WDJB-MJHT","verification_uri":"https://as/device","verification_uri_complete":"https://as/device?c=WDJB-MJHT","expires_in":"1800","interval":2}`
	d, err := ParseDeviceAuthorization([]byte(good))
	if err != nil || d.ExpiresIn != 30*time.Minute || d.Interval != 2*time.Second || d.VerificationURIComplete == nil {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = ParseDeviceAuthorization([]byte(`{"device_code":"d","user_code":"U","verification_uri":"https://as/device","verification_uri_complete":"javascript:x","expires_in":600}`))
	if err != nil || d.Interval != 5*time.Second || d.VerificationURIComplete != nil {
		t.Fatalf("defaults: %+v %v", d, err)
	}
	for _, bad := range []string{
		`{"user_code":"U","verification_uri":"https://as/d","expires_in":600}`,
		`{"device_code":"d","user_code":"U","verification_uri":"javascript:alert(1)","expires_in":600}`,
		`{"device_code":"d","user_code":"U\u001b[2J","verification_uri":"https://as/d","expires_in":600}`,
		`{"device_code":"d","user_code":"U","verification_uri":"https://as/d"}`,
		`{"device_code":"d","user_code":"U","verification_uri":"https://as/d\u000a","expires_in":600}`,
	} {
		if _, err := ParseDeviceAuthorization([]byte(bad)); !errors.Is(err, ErrMetadata) {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

func FuzzParseDeviceAuthorization(f *testing.F) {
	f.Add([]byte(`{"device_code":"d","user_code":"WDJB-MJHT","verification_uri":"https://as/device","expires_in":1800,"interval":5}`))
	f.Add([]byte(`{"device_code":"d","user_code":"U","verification_uri":"http://127.0.0.1/x","verification_uri_complete":"https://a/b?c","expires_in":"1e9","interval":"-1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDeviceAuthorization(b)
		if err != nil {
			return
		}
		if d.DeviceCode == "" || d.UserCode == "" || d.ExpiresIn <= 0 || d.Interval <= 0 {
			t.Fatalf("accepted %+v", d)
		}
		for _, s := range []string{d.UserCode, d.VerificationURI.String()} {
			if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("control character in %q", s)
			}
		}
	})
}
