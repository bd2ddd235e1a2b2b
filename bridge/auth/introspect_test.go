package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

func introspecting(as *authtest.Server) func(*Config) {
	return func(c *Config) { c.IntrospectionURL = as.URL + "/introspect" }
}

// 1,000 random tokens at once against the introspection endpoint (each
// answer taking 20 ms): a known user whose verdict needs asking again
// meanwhile is answered well within 2 s (a reserved slot, not the end of
// the queue), its verdict stays cached (the random tokens' inactive
// verdicts have their own cache), and the storm's requests are answered
// 503 at once past the bounded queue instead of waiting behind each other.
func TestIntrospectionStorm(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, introspecting(as))
	in := rs.s.intro
	in.ttl = 100 * time.Millisecond // the known verdict goes stale during the storm
	as.IntrospectionDelay(20 * time.Millisecond)
	known := as.Opaque(map[string]any{"active": true, "sub": "alice", "aud": resourceURL, "exp": time.Now().Add(time.Hour).Unix()})
	if status, _, _ := authenticate(rs, known); status != 200 {
		t.Fatalf("known user: %d", status)
	}

	const storm = 1000
	type result struct {
		status int
		took   time.Duration
	}
	results := make(chan result, storm)
	var wg sync.WaitGroup
	for i := range storm {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			status, _, _ := authenticate(rs, fmt.Sprintf("random-%d-%d", i, start.UnixNano()))
			results <- result{status, time.Since(start)}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := as.AwaitIntrospections(ctx, 1+introspectionConcurrency); err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	pace(time.Second, 100*time.Millisecond, func() {
		start := time.Now()
		status, _, _ := authenticate(rs, known)
		took := time.Since(start)
		worst = max(worst, took)
		if status != 200 || took >= 2*time.Second {
			t.Errorf("known user during the storm: status %d after %v", status, took)
		}
	})
	wg.Wait()
	close(results)
	var lat []time.Duration
	counts := map[int]int{}
	for r := range results {
		counts[r.status]++
		lat = append(lat, r.took)
	}
	t.Logf("known user: slowest %v over 1 s of storm, introspected %d times; storm of %d: %v, p99 %v, slowest %v",
		worst, as.Introspected(known), storm, counts, percentile(lat, 0.99), percentile(lat, 1))
	if counts[200] > 0 || counts[401]+counts[503] != storm {
		t.Errorf("storm answers %v", counts)
	}
	if as.Introspected(known) < 2 {
		t.Errorf("the known verdict was never asked again: the test did not test the slow path")
	}
	in.mu.Lock()
	_, cached := in.active[sha256.Sum256([]byte(resourceURL+"\x00"+known))]
	inactive := len(in.inactive)
	in.mu.Unlock()
	if !cached {
		t.Error("the known user's verdict is gone from the cache")
	}
	if inactive == 0 || inactive > inactiveCache {
		t.Errorf("%d inactive verdicts", inactive)
	}
}

// Past its queue no request waits behind a hung introspection endpoint:
// of 40 new tokens at once, those that get no slot are answered 503 with
// Retry-After within about introspectionWait.
func TestIntrospectionHungEndpointBounded(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	defer as.HangIntrospection(false)
	rs := newResource(t, as, nil, func(c *Config) {
		introspecting(as)(c)
		c.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	})
	as.HangIntrospection(true)
	const n = 40
	took := make(chan time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			status, h, _ := authenticateHeader(rs, fmt.Sprintf("new-%d", i))
			if status != 503 || h.Get("Retry-After") == "" || h.Get("Retry-After") == "0" {
				t.Errorf("token %d: %d, Retry-After %q; want 503 with Retry-After", i, status, h.Get("Retry-After"))
			}
			took <- time.Since(start)
		}()
	}
	wg.Wait()
	close(took)
	fast := 0
	var lat []time.Duration
	for d := range took {
		lat = append(lat, d)
		if d < introspectionWait+time.Second {
			fast++
		}
	}
	t.Logf("40 tokens, endpoint hung: %d answered within %v, slowest %v", fast, introspectionWait+time.Second, percentile(lat, 1))
	if fast < n-introspectionConcurrency {
		t.Errorf("only %d of %d answered within %v", fast, n, introspectionWait+time.Second)
	}
	if slowest := percentile(lat, 1); slowest > 3*time.Second+2*time.Second {
		t.Errorf("slowest %v: longer than the client's timeout", slowest)
	}
}

// Ory Hydra introspects a refresh token as active with the resource's aud
// and token_use "refresh_token": it is refused (401), as are other kinds
// that are not access tokens; Hydra's access tokens are admitted.
func TestIntrospectedTokenKinds(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, introspecting(as))
	exp := time.Now().Add(time.Hour).Unix()
	answer := func(extra map[string]any) string {
		a := map[string]any{"active": true, "sub": "bob", "aud": resourceURL, "exp": exp, "client_id": "app"}
		for k, v := range extra {
			a[k] = v
		}
		return as.Opaque(a)
	}
	for _, c := range []struct {
		extra map[string]any
		want  int
	}{
		{map[string]any{"token_use": "refresh_token", "token_type": "Bearer"}, 401}, // Hydra 2.3, refresh token
		{map[string]any{"token_use": "access_token", "token_type": "Bearer"}, 200},  // Hydra 2.3, access token
		{map[string]any{"token_type": "refresh_token"}, 401},
		{map[string]any{"token_type": "urn:ietf:params:oauth:token-type:refresh_token"}, 401},
		{map[string]any{"token_use": "id"}, 401},
		{map[string]any{"token_type": "urn:ietf:params:oauth:token-type:access_token"}, 200},
		{nil, 200},
	} {
		if status, _, _ := authenticate(rs, answer(c.extra)); status != c.want {
			t.Errorf("%v: %d, want %d", c.extra, status, c.want)
		}
	}
	// A JWT that says it is an ID token (Cognito's token_use) is refused too.
	if status, _, _ := authenticate(rs, as.Token(authtest.Claims{Audience: []string{resourceURL}, Extra: map[string]any{"token_use": "id"}})); status != 401 {
		t.Errorf("JWT with token_use id: %d", status)
	}
}

// A JWT whose sub reads "client:svc" and an introspected client
// credentials token of the client "svc" are different principals.
func TestPrincipalKinds(t *testing.T) {
	as := authtest.New("")
	defer as.Close()
	rs := newResource(t, as, nil, introspecting(as))
	exp := time.Now().Add(time.Hour).Unix()
	_, _, user := authenticate(rs, as.Token(authtest.Claims{Audience: []string{resourceURL}, Subject: "client:svc"}))
	_, _, user2 := authenticate(rs, as.Token(authtest.Claims{Audience: []string{resourceURL}, Subject: "client:" + as.Issuer + " svc"}))
	_, _, client := authenticate(rs, as.Opaque(map[string]any{"active": true, "client_id": "svc", "aud": resourceURL, "exp": exp}))
	_, _, introUser := authenticate(rs, as.Opaque(map[string]any{"active": true, "sub": "client:svc", "aud": resourceURL, "exp": exp}))
	if user == "" || client == "" || user == client || user2 == client {
		t.Fatalf("JWT subject %q, %q and introspected client %q", user, user2, client)
	}
	if introUser != user {
		t.Errorf("the same sub by JWT (%q) and by introspection (%q) differ", user, introUser)
	}
}
