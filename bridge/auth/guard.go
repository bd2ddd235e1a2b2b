package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// A Guard admits the requests of one endpoint: by a static bearer token
// (--auth-token, --auth-token-file) or by what its Authenticator accepts
// (an OAuth access token). It is safe for concurrent use; SetTokens
// replaces the token file's tokens while requests are checked.
type Guard struct {
	tokens   atomic.Pointer[tokenSet] // replaced whole by SetTokens
	static   []NamedToken             // the tokens given to NewGuard: kept across SetTokens
	auth     Authenticator            // nil: static tokens only
	required bool                     // some credential was configured at NewGuard
}

// tokenSet is the accepted static tokens: SHA-256 and name of each, and
// the tokens themselves for the child's environment scrub.
type tokenSet struct {
	hashes [][32]byte
	names  []string
	raw    []string
}

func newTokenSet(ts []NamedToken) *tokenSet {
	set := &tokenSet{}
	for _, t := range ts {
		if t.Token == "" {
			continue
		}
		set.hashes = append(set.hashes, sha256.Sum256([]byte(t.Token)))
		set.names = append(set.names, t.Name)
		set.raw = append(set.raw, t.Token)
	}
	return set
}

// NewGuard accepts the static tokens (unnamed: --auth-token), the named
// ones (a token file's, which SetTokens replaces) and whatever a (nil
// for none) accepts. With none of them it admits everyone.
func NewGuard(static []string, named []NamedToken, a Authenticator) *Guard {
	g := &Guard{auth: a}
	for _, t := range static {
		g.static = append(g.static, NamedToken{Token: t})
	}
	g.tokens.Store(newTokenSet(append(slices.Clip(g.static), named...)))
	// A Handler made with credentials keeps requiring them: SetTokens with
	// an empty set refuses everyone rather than opening the endpoint.
	g.required = len(g.tokens.Load().hashes) > 0 || g.auth != nil
	return g
}

// Required reports whether requests need a credential: decided at
// NewGuard, whatever SetTokens gives later.
func (g *Guard) Required() bool { return g.required }

// SetTokens replaces the tokens given besides the static ones.
func (g *Guard) SetTokens(named []NamedToken) {
	g.tokens.Store(newTokenSet(append(slices.Clip(g.static), named...)))
}

// Tokens returns the static tokens accepted now, for the scrub of a
// child's environment (ScrubEnv).
func (g *Guard) Tokens() []string { return g.tokens.Load().raw }

// Admit checks r's credential. It returns r carrying its Principal, or a
// nil request with the status and the message for the body of the
// refusal; the challenge headers are set on w then. A Guard that requires
// nothing admits r as it is.
func (g *Guard) Admit(w http.ResponseWriter, r *http.Request) (_ *http.Request, status int, msg string) {
	if !g.required {
		return r, 0, ""
	}
	authz := r.Header.Get("Authorization")
	if p, ok := g.Match(authz); ok {
		return WithPrincipal(r, p), 0, ""
	}
	if g.auth != nil {
		subject, err := g.auth.Authenticate(w, r)
		if err == nil {
			return WithPrincipal(r, OAuthPrincipal(subject)), 0, ""
		}
		status := http.StatusUnauthorized
		var se interface{ HTTPStatus() int }
		if errors.As(err, &se) {
			status = se.HTTPStatus()
		}
		return nil, status, http.StatusText(status) + ": " + err.Error()
	}
	// Static tokens only: no OAuth metadata is advertised (the well-known
	// paths are 404), and the challenge says in words that a token is to
	// be configured, for a host that would otherwise start an OAuth login
	// no authorization server answers.
	challenge := `Bearer realm="mcp-bridge", error_description="this server takes a static bearer token and offers no OAuth login"`
	if authz != "" {
		challenge = `Bearer realm="mcp-bridge", error="invalid_token", error_description="the bearer token is not one this server accepts"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	return nil, http.StatusUnauthorized, "Unauthorized: a valid bearer token is required"
}

// Match compares the presented token with every accepted one in constant
// time (hashing first makes the comparison independent of the presented
// token's length too, and no early exit tells which token came close).
func (g *Guard) Match(authz string) (Principal, bool) {
	tok, ok := Bearer(authz)
	if !ok {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(tok))
	ts := g.tokens.Load()
	found := -1
	for i := range ts.hashes {
		if subtle.ConstantTimeCompare(h[:], ts.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return tokenPrincipal(ts.hashes[found], ts.names[found]), true
}

// oauthPaths are where a client looks for an OAuth login after a 401:
// the RFC 9728 and RFC 8414/OIDC well-known documents and, for a
// 2025-03-26-era client that found none, the default endpoints at the
// origin.
var oauthPaths = []string{"/.well-known/", "/register", "/authorize", "/token"}

// ServeNoLogin answers a request for an OAuth login path (oauthPaths) to
// an endpoint that takes static tokens only, and reports whether it did;
// the caller answers any other path it does not serve. A host given no
// token that gets a 401 from a static-token endpoint goes looking for an
// OAuth login and shows the user the last answer (Claude Code 2.1:
// "Dynamic Client Registration rejected (HTTP 404): 404 page not found");
// on those paths the 404 says what is wanted instead.
func (g *Guard) ServeNoLogin(w http.ResponseWriter, r *http.Request) bool {
	if g.auth != nil || len(g.tokens.Load().hashes) == 0 {
		return false
	}
	for _, p := range oauthPaths {
		if strings.HasPrefix(r.URL.Path, p) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("mcp-bridge: this server has no OAuth login; it takes a static bearer token: configure the header \"Authorization: Bearer <token>\" (ask the server's operator for a token)\n"))
			return true
		}
	}
	return false
}
