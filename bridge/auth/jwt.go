package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// signatureAlgs are the algorithms a token may be signed with: public-key
// ones only. "none" is refused by go-jose outright, and HS* are left out:
// with an issuer's public key taken for an HMAC secret, anyone could sign
// tokens (the algorithm-confusion attack).
var signatureAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// maxTokenSize bounds what is parsed or sent to introspection: an access
// token is a few kilobytes at most.
const maxTokenSize = 16 << 10

// Identity is whom a verified token was issued for.
type Identity struct {
	Issuer  string
	Subject string // the sub claim, or with Client the client_id
	Scopes  []string
	// Client: an introspected token without sub, issued to the client
	// Subject itself (client credentials).
	Client bool

	expiry *time.Time // an introspected token's exp, if it has one
}

// Principal is the stable name of whom the token acts for, what serve
// keys children, logs and metrics by: "<issuer> <subject>" for a subject
// (a JWT's sub or an introspected one: the same user either way), and
// "client:<issuer> <client_id>" for an introspected client-credentials
// token. An issuer holds no space and starts with "http", so neither
// kind can be made to read as the other: a JWT with sub "client:svc" is
// not the client "svc".
func (id *Identity) Principal() string {
	if id.Client {
		return "client:" + id.Issuer + " " + id.Subject
	}
	return id.Issuer + " " + id.Subject
}

// accessClaims are the claims checked beyond go-jose's registered ones.
type accessClaims struct {
	jwt.Claims
	Scope    json.RawMessage `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	TokenUse json.RawMessage `json:"token_use"` // Amazon Cognito: "access" or "id"
}

// looksLikeJWT: three base64url parts (a JWS in compact form). Anything
// else is an opaque token, for introspection.
func looksLikeJWT(tok string) bool {
	return strings.Count(tok, ".") == 2
}

// verifyJWT checks a JWT access token for resource: its issuer is trusted,
// its signature is by one of the issuer's published keys, its audience
// holds resource, and it is within its validity period.
func (s *Server) verifyJWT(ctx context.Context, raw, resource string) (*Identity, error) {
	tok, err := jwt.ParseSigned(raw, signatureAlgs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(tok.Headers) != 1 {
		return nil, ErrMalformed
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	// The issuer is looked up before any key is fetched, so that a token
	// naming some other issuer costs nothing but this map lookup.
	is := s.issuers[unverified.Issuer]
	if is == nil {
		return nil, ErrUnknownIssuer
	}
	h := tok.Headers[0]
	keys, err := is.keysFor(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var c accessClaims
	verified := false
	for _, k := range keys {
		if tok.Claims(k.Key, &c) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, ErrSignature
	}
	return s.checkClaims(&c, is.id, resource)
}

func (s *Server) checkClaims(c *accessClaims, iss, resource string) (*Identity, error) {
	if c.Expiry == nil {
		// RFC 9068 §2.2: exp is REQUIRED in a JWT access token; one without
		// it would be valid forever.
		return nil, fmt.Errorf("%w: exp", ErrClaims)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: sub", ErrClaims)
	}
	if len(c.TokenUse) > 0 {
		var use string
		if json.Unmarshal(c.TokenUse, &use) != nil || !accessTokenUse(use, "") {
			return nil, fmt.Errorf("%w: token_use %s", ErrNotAccessToken, c.TokenUse)
		}
	}
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: iss, Time: time.Now()}, s.cfg.skew())
	switch {
	case errors.Is(err, jwt.ErrExpired), errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, ErrExpired
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrClaims, err)
	}
	// authorization (Token Handling): "MCP servers MUST validate that
	// access tokens were issued specifically for them as the intended
	// audience, according to RFC 8707 Section 2."
	if !audienceHolds(c.Audience, resource) {
		return nil, ErrAudience
	}
	scopes, err := parseScopes(c.Scope, c.Scp)
	if err != nil {
		return nil, err
	}
	return &Identity{Issuer: iss, Subject: c.Subject, Scopes: scopes}, nil
}

// audienceHolds compares each audience with the resource's canonical URI.
// authorization (Canonical Server URI): "While the canonical form uses
// lowercase scheme and host components, implementations SHOULD accept
// uppercase scheme and host components"; a trailing slash is taken as
// the same URI too, as authorization servers differ in adding one.
func audienceHolds(aud []string, resource string) bool {
	want := canonical(resource)
	for _, a := range aud {
		if canonical(a) == want {
			return true
		}
	}
	return false
}

func canonical(u string) string {
	u = strings.TrimSuffix(u, "/")
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	host, path, _ := strings.Cut(rest, "/")
	if path != "" {
		path = "/" + path
	}
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + path
}

// parseScopes reads the granted scopes: "scope", a space-separated string
// (RFC 9068 §2.2.3, RFC 8693), or "scp", an array (Okta and others) or a
// space-separated string (Microsoft Entra).
func parseScopes(scope, scp json.RawMessage) ([]string, error) {
	var out []string
	for _, raw := range []json.RawMessage{scope, scp} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var str string
		if json.Unmarshal(raw, &str) == nil {
			out = append(out, strings.Fields(str)...)
			continue
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%w: scope is neither a string nor a list of them", ErrClaims)
		}
		out = append(out, list...)
	}
	return out, nil
}
