package auth

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

// pace runs f every interval until d has passed (load generation, not
// synchronization).
func pace(d, interval time.Duration, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.After(d)
	for {
		f()
		select {
		case <-tick.C:
		case <-end:
			return
		}
	}
}

// A hung key set endpoint does not hold up tokens signed by a cached
// key, also once the keys' lifetime (KeyTTL, --oauth-key-ttl 2s) has
// passed: they are answered at once from the stale set while refreshes
// are tried in the background.
func TestHungJWKSCachedKeysAnswer(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	defer as.HangJWKS(false)
	rs := newResource(t, as, nil, func(c *Config) { c.KeyTTL = 2 * time.Second; c.KeyRefetchInterval = 0 })
	tok := as.Token(authtest.Claims{Audience: []string{resourceURL}})
	if status, _, _ := authenticate(rs, tok); status != 200 {
		t.Fatalf("first request: %d", status)
	}
	as.HangJWKS(true)
	var worst time.Duration
	n := 0
	// Two lifetimes and more: the set goes stale at 2 s, a refresh hangs.
	pace(5*time.Second, 25*time.Millisecond, func() {
		start := time.Now()
		status, _, _ := authenticate(rs, tok)
		took := time.Since(start)
		worst = max(worst, took)
		n++
		if status != 200 || took > time.Second {
			t.Errorf("request %d at +%v: status %d after %v", n, time.Since(start), status, took)
		}
	})
	t.Logf("%d requests over 5 s with the key set endpoint hung: slowest %v; JWKS asked %d times", n, worst, as.JWKSFetches.Load())
	if as.JWKSFetches.Load() < 2 {
		t.Errorf("no refresh was tried after the keys' lifetime")
	}
}

// After a rotation at the issuer, while a storm of tokens with made-up
// kids goes on, a token signed with the new key is admitted within 2 s
// and no good token ever gets 401 (503 with Retry-After while the keys
// may be stale is allowed). The storm costs the issuer about one fetch a
// second.
func TestRotationDuringGarbageKidStorm(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, func(c *Config) { c.KeyRefetchInterval = 0 }) // defaults: 30 s per kid
	aud := []string{resourceURL}
	if status, _, _ := authenticate(rs, as.Token(authtest.Claims{Audience: aud})); status != 200 {
		t.Fatalf("first request: %d", status)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stormMu sync.Mutex
	storm := map[int]int{}
	var lat []time.Duration
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				tok := as.Token(authtest.Claims{Audience: aud, KeyID: "garbage-" + string(rune('a'+g)) + "-" + strings.Repeat("x", i%7) + time.Now().Format("150405.000000")})
				start := time.Now()
				status, _, _ := authenticate(rs, tok)
				stormMu.Lock()
				storm[status]++
				lat = append(lat, time.Since(start))
				stormMu.Unlock()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	// Let the storm spend the fetches it can before the rotation.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := as.AwaitJWKSAnswers(ctx, 3); err != nil {
		t.Fatalf("the storm prompted no fetch: %v", err)
	}
	fetchesBefore, stormStart := as.JWKSFetches.Load(), time.Now()
	t.Logf("storm under way, %d fetches", fetchesBefore)

	as.Rotate()
	rotated := time.Now()
	var admitted time.Duration
	tries := 0
	for admitted == 0 && time.Since(rotated) < 10*time.Second {
		tries++
		status, h, _ := authenticateHeader(rs, as.Token(authtest.Claims{Audience: aud}))
		switch status {
		case 200:
			admitted = time.Since(rotated)
		case 503:
			t.Logf("try %d: 503 (Retry-After %q) at +%v", tries, h.Get("Retry-After"), time.Since(rotated))
			if h.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			<-time.After(100 * time.Millisecond) // a client honouring Retry-After, faster
		default:
			t.Fatalf("a token signed with the new key: status %d at +%v", status, time.Since(rotated))
		}
	}
	if admitted == 0 || admitted > 2*time.Second {
		t.Fatalf("the new key's token admitted after %v (%d tries), want within 2 s", admitted, tries)
	}
	// Good tokens keep being admitted while the storm goes on.
	pace(1500*time.Millisecond, 50*time.Millisecond, func() {
		if status, _, _ := authenticate(rs, as.Token(authtest.Claims{Audience: aud})); status != 200 {
			t.Errorf("a good token during the storm: %d", status)
		}
	})
	elapsed := time.Since(stormStart)
	fetches := as.JWKSFetches.Load() - fetchesBefore
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	stormMu.Lock()
	defer stormMu.Unlock()
	p99 := percentile(lat, 0.99)
	t.Logf("new key admitted %v after the rotation (%d tries); storm: %v, p99 %v; %d key fetches in %v", admitted, tries, storm, p99, fetches, elapsed.Round(time.Millisecond))
	if storm[200] > 0 {
		t.Errorf("%d garbage-kid tokens admitted", storm[200])
	}
	if limit := int64(elapsed/keyFetchGap) + 2; fetches > limit {
		t.Errorf("%d key fetches in %v of storm, want at most %d", fetches, elapsed, limit)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ { // insertion sort: small slices
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// The key set's lifetime is --oauth-key-ttl (per issuer in the config
// file), or a shorter Cache-Control max-age of its response, at least
// minKeyMaxAge.
func TestKeyLifetime(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	tok := as.Token(authtest.Claims{Audience: []string{resourceURL}})
	for _, c := range []struct {
		ttl, issuerTTL time.Duration
		cacheControl   string
		want           time.Duration
	}{
		{0, 0, "", time.Hour},
		{0, 0, "public, max-age=600", 10 * time.Minute},
		{0, 0, "max-age=0", minKeyMaxAge},
		{0, 0, "no-store", time.Hour},
		{2 * time.Second, 0, "max-age=600", 2 * time.Second},
		{time.Hour, 5 * time.Minute, "max-age=600", 5 * time.Minute},
		{time.Hour, 0, "max-age=7200", time.Hour},
	} {
		as.JWKSCacheControl(c.cacheControl)
		rs := newResource(t, as, nil, func(cfg *Config) {
			cfg.KeyTTL = c.ttl
			if c.issuerTTL > 0 {
				cfg.IssuerKeyTTL = map[string]time.Duration{as.Issuer: c.issuerTTL}
			}
		})
		if _, err := rs.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		is := rs.s.issuers[as.Issuer]
		is.mu.Lock()
		got := is.expires.Sub(is.lastEnd)
		is.mu.Unlock()
		if got != c.want {
			t.Errorf("--oauth-key-ttl %v, issuer %v, Cache-Control %q: lifetime %v, want %v", c.ttl, c.issuerTTL, c.cacheControl, got, c.want)
		}
	}
	if _, err := New(Config{Issuers: []string{as.Issuer}, IssuerKeyTTL: map[string]time.Duration{"https://other.example": time.Minute}}); err == nil {
		t.Error("a key lifetime for an untrusted issuer accepted")
	}
}

// A token without a kid is checked against at most maxKidless keys, and
// a key set with more than maxKeys keys says so in the log.
func TestKidlessTokensBounded(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	var logs bytes.Buffer
	aud := []string{resourceURL}
	as.Decoys(maxKidless - 1)
	rs := newResource(t, as, nil, nil)
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: aud, NoKeyID: true})); err != nil {
		t.Fatalf("kid-less token, its key %d-th in the set: %v", maxKidless, err)
	}
	as.Decoys(maxKidless)
	rs = newResource(t, as, nil, nil)
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: aud, NoKeyID: true})); !errors.Is(err, ErrSignature) {
		t.Fatalf("kid-less token, its key past the first %d: %v, want ErrSignature", maxKidless, err)
	}
	// The kid still finds it.
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: aud})); err != nil {
		t.Fatal(err)
	}
	as.Decoys(maxKeys)
	rs = newResource(t, as, nil, func(c *Config) { c.Logger = zerolog.New(&logs) })
	if _, err := rs.Verify(context.Background(), as.Token(authtest.Claims{Audience: aud})); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the 65th key: %v, want ErrUnknownKey", err)
	}
	if !strings.Contains(logs.String(), `"keys":65,"kept":64`) {
		t.Errorf("no warning about the dropped key:\n%s", logs.String())
	}
}

// A token naming a key the cached set lacks while the key set endpoint
// hangs: 503 with Retry-After within keyWait (the keys may be stale),
// not 401 and not a wait for the fetch's whole timeout; the old key's
// tokens keep working meanwhile.
func TestUnknownKidHungIssuer503(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	defer as.HangJWKS(false)
	rs := newResource(t, as, nil, func(c *Config) { c.KeyRefetchInterval = 0 })
	aud := []string{resourceURL}
	old := as.Token(authtest.Claims{Audience: aud})
	if status, _, _ := authenticate(rs, old); status != 200 {
		t.Fatalf("first request: %d", status)
	}
	as.HangJWKS(true)
	as.Rotate()
	start := time.Now()
	status, h, _ := authenticateHeader(rs, as.Token(authtest.Claims{Audience: aud}))
	took := time.Since(start)
	t.Logf("new kid, issuer hung: %d after %v, Retry-After %q", status, took, h.Get("Retry-After"))
	if status != 503 || h.Get("Retry-After") == "" || took > keyWait+time.Second {
		t.Fatalf("new kid, issuer hung: %d after %v, Retry-After %q; want 503 with Retry-After within %v", status, took, h.Get("Retry-After"), keyWait)
	}
	start = time.Now()
	if status, _, _ := authenticate(rs, old); status != 200 || time.Since(start) > time.Second {
		t.Fatalf("the cached key's token meanwhile: %d after %v", status, time.Since(start))
	}
}

// Stale keys serve only up to KeyMaxStale past their lifetime: after
// that, while the issuer still hangs, 503 with Retry-After (the issuer
// may have withdrawn a key), within keyWait.
func TestStaleKeysBounded(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	defer as.HangJWKS(false)
	rs := newResource(t, as, nil, func(c *Config) {
		c.KeyTTL, c.KeyMaxStale, c.KeyRefetchInterval = time.Second, time.Second, 0
	})
	tok := as.Token(authtest.Claims{Audience: []string{resourceURL}})
	if status, _, _ := authenticate(rs, tok); status != 200 {
		t.Fatalf("first request: %d", status)
	}
	as.HangJWKS(true)
	is := rs.s.issuers[as.Issuer]
	is.mu.Lock()
	limit := is.expires.Add(time.Second)
	is.mu.Unlock()
	got := map[int]int{}
	pace(time.Until(limit.Add(time.Second)), 50*time.Millisecond, func() {
		start := time.Now()
		status, h, _ := authenticateHeader(rs, tok)
		took := time.Since(start)
		switch {
		case start.Before(limit.Add(-100*time.Millisecond)) && status != 200:
			t.Errorf("at %v before the bound: %d", time.Until(limit), status)
		case start.After(limit) && (status != 503 || h.Get("Retry-After") == "" || took > keyWait+time.Second):
			t.Errorf("%v past the bound: %d after %v", -time.Until(limit), status, took)
		}
		got[status]++
	})
	t.Logf("lifetime 1 s, stale bound 1 s, issuer hung: %v", got)
}

// The wait after a failed fetch counts from the attempt's end: an
// attempt that hung for 10 s does not make the next one due at once.
func TestBackoffFromAttemptEnd(t *testing.T) {
	s, err := New(Config{Issuers: []string{"https://as.example"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	is := s.issuers["https://as.example"]
	now := time.Now()
	is.lastStart, is.lastEnd, is.failures = now.Add(-10*time.Second), now, 1
	if got := is.nextAllowed().Sub(now); got != failureBackoff {
		t.Errorf("after one failure: next fetch in %v, want %v from the attempt's end", got, failureBackoff)
	}
	is.failures = 10
	if got := is.nextAllowed().Sub(now); got != maxFailureBackoff {
		t.Errorf("after 10 failures: %v, want %v", got, maxFailureBackoff)
	}
	is.failures = 0
	if got := is.nextAllowed().Sub(now); got != keyFetchGap {
		t.Errorf("after a success: %v, want %v", got, keyFetchGap)
	}
}
