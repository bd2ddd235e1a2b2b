package rsauth

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
	// introspectionCache bounds the remembered verdicts (by the token's
	// SHA-256, never the token itself).
	introspectionCache = 1024
	// introspectionTTL bounds how long an "active" verdict is trusted
	// without asking again: a revoked token stops working within it.
	introspectionTTL = 60 * time.Second
	// inactiveTTL: an "inactive" verdict is remembered shortly, so that a
	// client retrying a dead token does not cost a round trip each time.
	inactiveTTL = 10 * time.Second
	// introspectionConcurrency bounds the requests in flight to the
	// endpoint; more wait (for as long as their own request may).
	introspectionConcurrency = 8
)

type verdict struct {
	id    *Identity
	err   error
	until time.Time
}

// introspector asks an RFC 7662 endpoint about opaque tokens.
type introspector struct {
	s    *Server
	sem  chan struct{}
	mu   sync.Mutex
	seen map[[32]byte]verdict
}

func newIntrospector(s *Server) *introspector {
	return &introspector{s: s, sem: make(chan struct{}, introspectionConcurrency), seen: map[[32]byte]verdict{}}
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
}

func (in *introspector) verify(ctx context.Context, tok, resource string) (*Identity, error) {
	key := sha256.Sum256([]byte(resource + "\x00" + tok))
	in.mu.Lock()
	v, ok := in.seen[key]
	in.mu.Unlock()
	if ok && time.Now().Before(v.until) {
		return v.id, v.err
	}
	select {
	case in.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	}
	id, ttl, err := in.ask(ctx, tok, resource)
	<-in.sem
	if ttl > 0 {
		in.remember(key, verdict{id: id, err: err, until: time.Now().Add(ttl)})
	}
	return id, err
}

func (in *introspector) remember(key [32]byte, v verdict) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.seen) >= introspectionCache {
		now := time.Now()
		for k, old := range in.seen {
			if now.After(old.until) {
				delete(in.seen, k)
			}
		}
		for k := range in.seen {
			if len(in.seen) < introspectionCache {
				break
			}
			delete(in.seen, k) // any: map order is random
		}
	}
	in.seen[key] = v
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
	sub := r.Subject
	if sub == "" && r.ClientID != "" {
		sub = "client:" + r.ClientID // a client_credentials token acts for its client
	}
	if sub == "" {
		return nil, inactiveTTL, fmt.Errorf("%w: sub", ErrClaims)
	}
	ttl := introspectionTTL
	if r.Expiry != nil {
		ttl = min(ttl, time.Until(r.Expiry.Time()))
	}
	return &Identity{Issuer: iss, Subject: sub, Scopes: strings.Fields(r.Scope)}, ttl, nil
}
