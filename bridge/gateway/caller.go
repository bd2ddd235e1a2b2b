package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// A caller is whom a request to the aggregated endpoint acts for, as the
// gateway verified it. The aggregate runs once per caller (aggfront.go)
// and reaches each server's route with the caller's own credential, so
// that the route's authorization, access log, metrics and --child-per
// principal see the caller and nobody else.
type caller struct {
	// key tells callers apart: "token:<SHA-256>" for a static token,
	// "oauth:<principal>" and the granted scopes for an OAuth token (a
	// token of the same subject with other scopes is another caller, so
	// that an aggregate never serves a token more than its own scopes
	// open), "" for the unauthenticated
	// caller (every caller of a gateway without inbound auth, and the one
	// that refuses everyone else's bad credentials).
	key string
	// name is what the routes see as the principal of a delegated OAuth
	// caller: the principal the aggregate's own resource server gave.
	name string
	// authorization is the Authorization header the aggregate dials the
	// routes with: a static caller's own token (every route accepts the
	// static tokens, as the one principal), or the credential minted for
	// an OAuth caller (delegates); "" for the unauthenticated caller.
	authorization string
	// static is a static-token caller: every route admits it directly,
	// whatever scopes its OAuth tokens need.
	static bool
	// scopes are an OAuth caller's granted scopes.
	scopes []string
}

// grants reports whether c may use a server requiring scopes (the file's
// mcpBridge.servers.<name>.scopes; the common ones the aggregate's own
// resource server required already).
func (c *caller) grants(scopes []string) bool {
	if c.static {
		return true
	}
	for _, s := range scopes {
		if !slices.Contains(c.scopes, s) {
			return false
		}
	}
	return true
}

// mayUse reports whether c may use server s through the aggregate: what
// s's route would admit c for. Without inbound auth everyone may.
func (g *Gateway) mayUse(c *caller, s *teamconfig.Server) bool {
	if !g.authOn() {
		return true
	}
	if c.key == "" {
		return false
	}
	return c.grants(s.Options.Scopes)
}

// authOn reports whether the gateway authenticates its clients: decided
// at New, as serve's Handlers decide it (one made with credentials keeps
// requiring them whatever SetTokens gives later).
func (g *Gateway) authOn() bool { return g.authRequired }

func authConfigured(cfg *Config) bool {
	b := &cfg.Base
	return b.AuthToken != "" || len(b.AuthTokens) > 0 || len(b.NamedTokens) > 0 || cfg.Auth != nil || b.Auth != nil
}

// inMemory marks the context of a request that came over the gateway's
// in-memory listener (dial.go): only the gateway's own clients reach it,
// and a context value cannot be sent by anyone outside the process.
type inMemory struct{}

func fromMemory(ctx context.Context) bool {
	v, _ := ctx.Value(inMemory{}).(bool)
	return v
}

// delegates are the credentials minted for OAuth callers of the
// aggregate, one per caller: a random string that names the caller and
// its verified scopes. A route accepts one only from the in-memory
// listener (routeAuth), only as that caller and only if the caller's
// scopes cover the route's own; it is never accepted as anyone else, and
// dropped with the caller's aggregate.
type delegates struct {
	mu     sync.RWMutex
	byHash map[[32]byte]*caller
}

// mint gives c a credential.
func (d *delegates) mint(c *caller) {
	tok := "mcp-bridge-delegate-" + rand.Text() + rand.Text()
	c.authorization = "Bearer " + tok
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byHash == nil {
		d.byHash = map[[32]byte]*caller{}
	}
	d.byHash[sha256.Sum256([]byte(tok))] = c
}

// revoke forgets c's credential.
func (d *delegates) revoke(c *caller) {
	tok, ok := auth.Bearer(c.authorization)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byHash, sha256.Sum256([]byte(tok)))
}

// lookup returns the caller a credential was minted for. The map is
// keyed by the credential's SHA-256: what is compared is a hash of what
// the client sent, not the secret itself.
func (d *delegates) lookup(authz string) (*caller, bool) {
	tok, ok := auth.Bearer(authz)
	if !ok {
		return nil, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	c, ok := d.byHash[sha256.Sum256([]byte(tok))]
	return c, ok
}

// routeAuth is a route's Authenticator when OAuth is on: the route's own
// resource server, and the aggregate's delegated callers, whose scopes
// the route checks against its own.
type routeAuth struct {
	inner  auth.Authenticator
	scopes []string // the server's own, from the file
	del    *delegates
}

// errDelegateScope refuses a delegated caller without the route's scopes.
var errDelegateScope = errors.New("gateway: the caller lacks a scope this server requires")

type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string   { return e.err.Error() }
func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) HTTPStatus() int { return e.status }

func (a *routeAuth) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	if fromMemory(r.Context()) {
		if c, ok := a.del.lookup(r.Header.Get("Authorization")); ok {
			if !c.grants(a.scopes) {
				return "", &statusError{http.StatusForbidden, errDelegateScope}
			}
			return c.name, nil
		}
	}
	return a.inner.Authenticate(w, r)
}

func (a *routeAuth) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	a.inner.ServeMetadata(w, r)
}

// acceptDelegates makes a route's OAuth resource server also admit the
// aggregate's delegated callers (routeAuth). Static-token callers need
// nothing: every route admits their own token.
func (g *Gateway) acceptDelegates(cfg *serve.Config, s *teamconfig.Server) {
	if cfg.Auth == nil {
		return
	}
	cfg.Auth = &routeAuth{inner: cfg.Auth, scopes: slices.Clone(s.Options.Scopes), del: &g.delegates}
}

// frontAuth is the Authenticator of a caller's aggregate Handler: the
// front verified the request already (identify) and says so in its
// context, so the token is not verified twice; a request without that
// mark is verified by the aggregate's own resource server.
type frontAuth struct {
	inner auth.Authenticator
}

type verifiedKey struct{}

func (a frontAuth) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, ok := r.Context().Value(verifiedKey{}).(*caller); ok {
		return c.name, nil
	}
	return a.inner.Authenticate(w, r)
}

func (a frontAuth) ServeMetadata(w http.ResponseWriter, r *http.Request) { a.inner.ServeMetadata(w, r) }

// scopeVerifier is what an OAuth resource server (auth.Resource) offers
// beyond auth.Authenticator: the scopes a token was granted.
type scopeVerifier interface {
	Verify(ctx context.Context, token string) (*auth.Identity, error)
}

// identify finds whom r acts for: a static token's holder, an OAuth
// token's principal and scopes, or nil when r has no credential the
// gateway accepts (the unauthenticated caller's Handler then answers it:
// it refuses with the right challenge, or serves when auth is off).
func (g *Gateway) identify(r *http.Request) *caller {
	authz := r.Header.Get("Authorization")
	tok, ok := auth.Bearer(authz)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(tok))
	g.mu.RLock()
	static := g.staticSums[sum]
	auth := g.aggAuth
	g.mu.RUnlock()
	if static {
		return &caller{key: "token:" + hex.EncodeToString(sum[:]), authorization: "Bearer " + tok, static: true}
	}
	if auth == nil {
		return nil
	}
	name, err := auth.Authenticate(discardHeaders{}, r)
	if err != nil {
		return nil
	}
	c := &caller{name: name}
	if sv, ok := auth.(scopeVerifier); ok {
		id, err := sv.Verify(r.Context(), tok)
		if err != nil {
			return nil
		}
		c.scopes = slices.Sorted(slices.Values(id.Scopes))
		c.scopes = slices.Compact(c.scopes)
	}
	// A NUL can be in neither a principal printed by bridge/auth nor a scope.
	c.key = "oauth:" + name + "\x00" + strings.Join(c.scopes, " ")
	return c
}

// setStatic records the static tokens identify recognizes.
func (g *Gateway) setStatic(named []auth.NamedToken) {
	sums := map[[32]byte]bool{}
	b := &g.cfg.Base
	for _, t := range append([]string{b.AuthToken}, b.AuthTokens...) {
		if t != "" {
			sums[sha256.Sum256([]byte(t))] = true
		}
	}
	for _, t := range named {
		if t.Token != "" {
			sums[sha256.Sum256([]byte(t.Token))] = true
		}
	}
	g.staticSums = sums
}

// discardHeaders is a ResponseWriter for identify's probe: the challenge
// an Authenticator sets on failure is written by the Handler that answers.
type discardHeaders struct{}

func (discardHeaders) Header() http.Header         { return http.Header{} }
func (discardHeaders) Write(b []byte) (int, error) { return len(b), nil }
func (discardHeaders) WriteHeader(int)             {}
