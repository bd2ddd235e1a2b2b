package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// maxKeys bounds the signing keys kept per issuer; a key set with more is
// cut, with a warning (an honest issuer publishes a handful: current,
// next, previous).
const maxKeys = 64

// maxKidless bounds the keys a token without a kid is checked against:
// each try is a signature verification, and a set may hold 64 keys.
const maxKidless = 4

// minKeyMaxAge is the least lifetime a key set's Cache-Control max-age
// can give it: a key set that says max-age=0 would otherwise be fetched
// about once a second under load.
const minKeyMaxAge = 30 * time.Second

// keySetDocument is a fetched key set and its response's header (do
// passes the header to a headerSink).
type keySetDocument struct {
	jose.JSONWebKeySet
	header http.Header
}

func (d *keySetDocument) setHeader(h http.Header) { d.header = h }

// load reads the metadata (once) and the key set, and returns the
// usable keys and how long they may be used.
func (is *issuer) load() ([]jose.JSONWebKey, string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(is.s.ctx, 2*fetchTimeout)
	defer cancel()
	is.mu.Lock()
	jwksURI := is.jwksURI
	is.mu.Unlock()
	if jwksURI == "" {
		md, err := is.s.discover(ctx, is.id)
		if err != nil {
			return nil, "", 0, err
		}
		if md.JWKSURI == "" {
			return nil, "", 0, errors.New("the issuer's metadata has no jwks_uri")
		}
		if err := checkURL("jwks_uri", md.JWKSURI); err != nil {
			return nil, "", 0, err
		}
		jwksURI = md.JWKSURI
	}
	var doc keySetDocument
	if found, err := is.s.getJSON(ctx, jwksURI, &doc); err != nil || !found {
		return nil, "", 0, errors.Join(errors.New("fetching jwks_uri"), err)
	}
	var keys []jose.JSONWebKey
	n := 0
	for _, k := range doc.Keys {
		if usable(k) {
			if n++; n <= maxKeys {
				keys = append(keys, k)
			}
		}
	}
	if n > maxKeys {
		is.s.log.Warn().Str("issuer", is.id).Int("keys", n).Int("kept", maxKeys).
			Msg("the issuer's key set has more signing keys than the bridge keeps: tokens signed by the others are refused")
	}
	if len(keys) == 0 {
		return nil, "", 0, errors.New("the issuer's key set has no public signing key")
	}
	lifetime := is.s.cfg.keyTTL(is.id)
	if maxAge, ok := parseMaxAge(doc.header.Values("Cache-Control")); ok {
		lifetime = min(lifetime, max(maxAge, minKeyMaxAge))
	}
	return keys, jwksURI, lifetime, nil
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
// checked against: the one(s) with that kid, or without a kid the first
// maxKidless keys; only keys whose type fits alg, and a key that declares
// its alg only serves that alg.
func matchKeys(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == alg) && fits(k, alg) {
			out = append(out, k)
			if kid == "" && len(out) == maxKidless {
				break
			}
		}
	}
	return out
}

// fits reports whether k's type can verify alg (one of signatureAlgs).
func fits(k jose.JSONWebKey, alg string) bool {
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case string(jose.ES256):
			return key.Curve == elliptic.P256()
		case string(jose.ES384):
			return key.Curve == elliptic.P384()
		case string(jose.ES512):
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
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
