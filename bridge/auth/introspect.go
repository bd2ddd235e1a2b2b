package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	// activeCache and inactiveCache bound the remembered verdicts (by the
	// token's SHA-256, never the token itself), each on its own: tokens
	// found inactive (a storm of random ones) never push out the verdicts
	// of real users.
	activeCache   = 1024
	inactiveCache = 4096
	// introspectionTTL bounds how long an "active" verdict is trusted
	// without asking again: a revoked token stops working within it.
	introspectionTTL = 60 * time.Second
	// knownFor: past its TTL, an active verdict is kept this long more
	// (never past the token's exp) to mark the token as known: asking
	// again about it takes a reserved slot, not a place in the queue.
	knownFor = 10 * time.Minute
	// inactiveTTL: an "inactive" verdict is remembered shortly, so that a
	// client retrying a dead token does not cost a round trip each time.
	inactiveTTL = 10 * time.Second
	// introspectionConcurrency bounds the requests in flight to the
	// endpoint; knownConcurrency more are reserved for known tokens.
	introspectionConcurrency = 8
	knownConcurrency         = 2
	// introspectionQueue bounds the requests waiting for a slot, and
	// introspectionWait how long each waits: past either, 503 with
	// Retry-After at once rather than a wait behind a storm of tokens or
	// a hung endpoint.
	introspectionQueue = 32
	introspectionWait  = time.Second
)

type verdict struct {
	id    *Identity
	err   error
	until time.Time // trusted until
	keep  time.Time // active verdicts: known until
}

// A call is one introspection under way; requests with the same token
// wait for it rather than asking again.
type call struct {
	done chan struct{}
	id   *Identity
	err  error
}

// introspector asks an RFC 7662 endpoint about opaque tokens.
type introspector struct {
	s     *Server
	ttl   time.Duration // introspectionTTL (shorter in tests)
	slots chan struct{} // general slots
	known chan struct{} // slots only known tokens take

	mu       sync.Mutex
	active   map[[32]byte]verdict
	inactive map[[32]byte]verdict
	calls    map[[32]byte]*call
	waiting  int // requests waiting for a general slot
}

func newIntrospector(s *Server) *introspector {
	return &introspector{s: s, ttl: introspectionTTL,
		slots: make(chan struct{}, introspectionConcurrency), known: make(chan struct{}, knownConcurrency),
		active: map[[32]byte]verdict{}, inactive: map[[32]byte]verdict{}, calls: map[[32]byte]*call{}}
}

// introspectionResponse is RFC 7662 §2.2's answer, the members used here.
type introspectionResponse struct {
	Active    bool             `json:"active"`
	Scope     string           `json:"scope"`
	ClientID  string           `json:"client_id"`
	Subject   string           `json:"sub"`
	Issuer    string           `json:"iss"`
	Audience  jwt.Audience     `json:"aud"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	TokenType string           `json:"token_type"`
	TokenUse  string           `json:"token_use"`
}

func (in *introspector) verify(ctx context.Context, tok, resource string) (*Identity, error) {
	key := sha256.Sum256([]byte(resource + "\x00" + tok))
	now := time.Now()
	in.mu.Lock()
	v, known := in.active[key]
	if known && now.Before(v.until) {
		in.mu.Unlock()
		return v.id, nil
	}
	known = known && now.Before(v.keep)
	if v, ok := in.inactive[key]; ok && now.Before(v.until) {
		in.mu.Unlock()
		return nil, v.err
	}
	if c := in.calls[key]; c != nil {
		in.mu.Unlock()
		select {
		case <-c.done:
			return c.id, c.err
		case <-ctx.Done():
			return nil, unavailableFor(time.Second, ctx.Err())
		}
	}
	c := &call{done: make(chan struct{})}
	in.calls[key] = c
	release, err := in.acquire(ctx, known) // in.mu held; unlocked inside
	var id *Identity
	var ttl time.Duration
	if err == nil {
		id, ttl, err = in.ask(ctx, tok, resource)
		release()
	}
	in.mu.Lock()
	delete(in.calls, key)
	if ttl > 0 {
		in.remember(key, id, err, ttl)
	}
	in.mu.Unlock()
	c.id, c.err = id, err
	close(c.done)
	return id, err
}

// acquire takes a slot for an introspection (called with in.mu held; it
// unlocks it). A known token takes a reserved slot or a general one; any
// other waits in the bounded queue for a general one.
func (in *introspector) acquire(ctx context.Context, known bool) (release func(), err error) {
	if !known && in.waiting >= introspectionQueue {
		in.mu.Unlock()
		return nil, unavailableFor(time.Second, fmt.Errorf("introspection: %d requests already wait for the endpoint", introspectionQueue))
	}
	in.waiting++
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.waiting--
		in.mu.Unlock()
	}()
	t := time.NewTimer(introspectionWait)
	defer t.Stop()
	var reserved chan struct{} // nil (never ready) unless known
	if known {
		reserved = in.known
	}
	select {
	case in.slots <- struct{}{}:
		return func() { <-in.slots }, nil
	case reserved <- struct{}{}:
		return func() { <-in.known }, nil
	case <-t.C:
		return nil, unavailableFor(time.Second, fmt.Errorf("introspection: no free slot within %v", introspectionWait))
	case <-ctx.Done():
		return nil, unavailableFor(time.Second, ctx.Err())
	}
}

// remember stores a verdict (in.mu held) in its own cache, making room
// by dropping expired verdicts, else any one of that cache.
func (in *introspector) remember(key [32]byte, id *Identity, err error, ttl time.Duration) {
	now := time.Now()
	v := verdict{id: id, err: err, until: now.Add(ttl)}
	cache, limit := in.inactive, inactiveCache
	if err == nil {
		cache, limit = in.active, activeCache
		v.keep = v.until.Add(knownFor)
		if id.expiry != nil && id.expiry.Before(v.keep) {
			v.keep = *id.expiry
		}
		delete(in.inactive, key)
	} else {
		delete(in.active, key)
	}
	if len(cache) >= limit {
		for k, old := range cache {
			if now.After(old.until) && now.After(old.keep) {
				delete(cache, k)
			}
		}
		for k := range cache {
			if len(cache) < limit {
				break
			}
			delete(cache, k) // any: map order is random
		}
	}
	cache[key] = v
}

// accessTokenUse reports whether an introspection answer's token_use and
// token_type, when present, say "access token". RFC 7662 §2.2 defines
// token_type as the RFC 6749 §7.1 type ("Bearer"); servers also answer
// with "access_token" or the RFC 8693 identifier, and Ory Hydra says
// token_use "access_token" or "refresh_token" and is active: true for
// both, with the same aud. A refresh token (or an ID token) presented as
// a bearer token must not be taken for an access token.
func accessTokenUse(use, typ string) bool {
	switch strings.ToLower(use) {
	case "", "access_token", "access":
	default:
		return false
	}
	switch strings.ToLower(typ) {
	case "", "bearer", "access_token", "urn:ietf:params:oauth:token-type:access_token":
		return true
	}
	return false
}

// ask returns the verdict and how long it may be remembered (0: not at
// all, e.g. when the endpoint could not be reached).
func (in *introspector) ask(ctx context.Context, tok, resource string) (*Identity, time.Duration, error) {
	s := in.s
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if s.cfg.IntrospectionClientID != "" {
		// RFC 6749 §2.3.1: client id and secret are form-encoded before
		// they go into HTTP Basic.
		req.SetBasicAuth(url.QueryEscape(s.cfg.IntrospectionClientID), url.QueryEscape(s.cfg.IntrospectionSecret))
	}
	var r introspectionResponse
	if found, err := s.do(req, &r); err != nil || !found {
		if err == nil {
			err = fmt.Errorf("%s: HTTP 404", s.cfg.IntrospectionURL)
		}
		s.log.Warn().Err(err).Msg("token introspection failed")
		return nil, 0, fmt.Errorf("%w: introspection: %w", ErrUnavailable, err)
	}
	if !r.Active {
		return nil, inactiveTTL, ErrInactive
	}
	if !accessTokenUse(r.TokenUse, r.TokenType) {
		return nil, inactiveTTL, fmt.Errorf("%w: token_use %q, token_type %q", ErrNotAccessToken, r.TokenUse, r.TokenType)
	}
	iss := r.Issuer
	if iss != "" && s.issuers[iss] == nil {
		return nil, inactiveTTL, ErrUnknownIssuer
	}
	if iss == "" {
		iss = s.cfg.Issuers[0]
	}
	now := time.Now()
	if r.Expiry != nil && now.After(r.Expiry.Time().Add(s.cfg.skew())) ||
		r.NotBefore != nil && now.Add(s.cfg.skew()).Before(r.NotBefore.Time()) {
		return nil, inactiveTTL, ErrExpired
	}
	// authorization (Token Handling): "MCP servers MUST validate that
	// access tokens were issued specifically for them as the intended
	// audience". An answer without aud cannot show that.
	if !audienceHolds(r.Audience, resource) {
		return nil, inactiveTTL, ErrAudience
	}
	id := &Identity{Issuer: iss, Subject: r.Subject, Scopes: strings.Fields(r.Scope)}
	if id.Subject == "" && r.ClientID != "" {
		// A client_credentials token acts for its client: a principal of
		// its own kind, never the same as a user whose sub happens to
		// read like it.
		id.Subject, id.Client = r.ClientID, true
	}
	if id.Subject == "" {
		return nil, inactiveTTL, fmt.Errorf("%w: sub", ErrClaims)
	}
	ttl := in.ttl
	if r.Expiry != nil {
		exp := r.Expiry.Time()
		id.expiry = &exp
		ttl = min(ttl, time.Until(exp))
	}
	return id, ttl, nil
}
