package rsauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// maxKeys bounds the signing keys kept per issuer; a key set with more is
// cut (an honest issuer publishes a handful: current, next, previous).
const maxKeys = 64

// failureBackoff is the least time between two fetches after one failed,
// so that an issuer that is down is not asked on every request.
const failureBackoff = 5 * time.Second

// An issuer caches one authorization server's metadata and signing keys.
type issuer struct {
	s  *Server
	id string

	mu       sync.Mutex
	jwksURI  string
	keys     []jose.JSONWebKey
	fetched  time.Time     // the last successful key fetch; zero: never
	tried    time.Time     // the last attempt, successful or not
	failed   bool          // the last attempt failed
	inflight chan struct{} // closed when the running fetch ends; nil: none
}

func newIssuer(s *Server, id string) *issuer { return &issuer{s: s, id: id} }

// keysFor returns the issuer's keys that may have signed a token whose
// header names kid and alg. An unknown kid makes it fetch the key set
// again (a rotation), at most once per KeyRefetchInterval.
func (is *issuer) keysFor(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	for attempt := 0; ; attempt++ {
		is.mu.Lock()
		now := time.Now()
		fresh := !is.fetched.IsZero() && now.Sub(is.fetched) < is.s.cfg.keyTTL()
		ks := matchKeys(is.keys, kid, alg)
		if len(ks) > 0 && fresh {
			is.mu.Unlock()
			return ks, nil
		}
		ch := is.inflight
		if ch == nil && attempt == 0 && is.mayFetch(now, fresh) {
			// This caller fetches; others that come meanwhile wait for it.
			ch = make(chan struct{})
			is.inflight, is.tried = ch, now
			is.mu.Unlock()
			is.fetch(ch)
			continue
		}
		if ch == nil || attempt > 0 {
			never, failed := is.fetched.IsZero(), is.failed
			is.mu.Unlock()
			switch {
			case len(ks) > 0:
				return ks, nil // stale keys while the issuer cannot be reached
			case never || failed:
				return nil, fmt.Errorf("%w: no signing keys from %s", ErrUnavailable, is.id)
			}
			return nil, ErrUnknownKey
		}
		is.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
	}
}

// mayFetch reports whether a key fetch may start now (is.mu held): a first
// or stale set is fetched unless the last attempt failed within
// failureBackoff; a fresh set that lacks a token's key is fetched again at
// most once per KeyRefetchInterval, whatever the tokens claim.
func (is *issuer) mayFetch(now time.Time, fresh bool) bool {
	since := now.Sub(is.tried)
	if is.failed && since < min(failureBackoff, is.s.cfg.refetchInterval()) {
		return false
	}
	if is.fetched.IsZero() || !fresh {
		return true
	}
	return since >= is.s.cfg.refetchInterval()
}

// fetch reads the metadata (once) and the key set, and ends the flight ch.
// It runs on the caller's goroutine but not under its context: waiters
// depend on it, so a caller that leaves must not cut it short.
func (is *issuer) fetch(ch chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*fetchTimeout)
	defer cancel()
	keys, jwksURI, err := is.load(ctx)
	is.mu.Lock()
	defer is.mu.Unlock()
	defer close(ch)
	is.inflight = nil
	is.failed = err != nil
	if err != nil {
		// The metadata is read again next time: the issuer may have
		// moved its key set.
		is.jwksURI = ""
		is.s.log.Warn().Err(err).Str("issuer", is.id).Msg("cannot fetch the issuer's signing keys")
		return
	}
	is.jwksURI, is.keys, is.fetched = jwksURI, keys, time.Now()
	is.s.log.Debug().Str("issuer", is.id).Int("keys", len(keys)).Msg("fetched the issuer's signing keys")
}

func (is *issuer) load(ctx context.Context) ([]jose.JSONWebKey, string, error) {
	is.mu.Lock()
	jwksURI := is.jwksURI
	is.mu.Unlock()
	if jwksURI == "" {
		md, err := is.s.discover(ctx, is.id)
		if err != nil {
			return nil, "", err
		}
		if md.JWKSURI == "" {
			return nil, "", errors.New("the issuer's metadata has no jwks_uri")
		}
		if err := checkURL("jwks_uri", md.JWKSURI); err != nil {
			return nil, "", err
		}
		jwksURI = md.JWKSURI
	}
	var set jose.JSONWebKeySet
	if found, err := is.s.getJSON(ctx, jwksURI, &set); err != nil || !found {
		return nil, "", errors.Join(errors.New("fetching jwks_uri"), err)
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		if usable(k) && len(keys) < maxKeys {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, "", errors.New("the issuer's key set has no public signing key")
	}
	return keys, jwksURI, nil
}

// usable: a public asymmetric key meant for signatures. A symmetric ("oct")
// key in a public key set would let anyone who read it sign tokens.
func usable(k jose.JSONWebKey) bool {
	if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}

// matchKeys returns the keys a token with header kid and alg may be
// checked against: the one(s) with that kid, or every key when the token
// names none; a key that declares its alg only serves that alg.
func matchKeys(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == alg) {
			out = append(out, k)
		}
	}
	return out
}

// asMetadata is the part of RFC 8414 / OIDC discovery metadata used here.
type asMetadata struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// discover fetches an issuer's metadata from the well-known locations in
// the order the MCP spec gives clients (authorization-server-discovery:
// "OAuth 2.0 Authorization Server Metadata with path insertion", "OpenID
// Connect Discovery 1.0 with path insertion", "OpenID Connect Discovery
// 1.0 path appending"); a resource server discovering keys has the same
// problem, so it takes the same path.
func (s *Server) discover(ctx context.Context, iss string) (*asMetadata, error) {
	u, err := url.Parse(iss)
	if err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	candidates := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		candidates = append(candidates, origin+path+"/.well-known/openid-configuration")
	}
	var errs []error
	for _, c := range candidates {
		var md asMetadata
		found, err := s.getJSON(ctx, c, &md)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !found {
			continue
		}
		// RFC 8414 §3.3: "The "issuer" value returned MUST be identical to
		// the authorization server's issuer identifier value into which the
		// well-known URI string was inserted"; otherwise the metadata is
		// not used (keys from it could be anyone's).
		if md.Issuer != iss {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", c, md.Issuer, iss))
			continue
		}
		return &md, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no authorization server metadata for %s at %s", iss, strings.Join(candidates, ", "))
	}
	return nil, errors.Join(errs...)
}
