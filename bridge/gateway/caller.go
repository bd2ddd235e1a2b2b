package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

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
	// name is what the routes see as the principal of an OAuth caller:
	// the principal the aggregate's own resource server gave.
	name string
	// authorization is a static caller's own Authorization header, which
	// each route checks against its own tokens (serve.Caller); "" for
	// another caller.
	authorization string
	// static is a static-token caller: every route admits it directly,
	// whatever scopes its OAuth tokens need.
	static bool
	// scopes are an OAuth caller's granted scopes.
	scopes []string
}

// serveCaller is c as a route admits it in-process (serve.Handler.Open).
func (c *caller) serveCaller() serve.Caller {
	if c.static {
		return serve.Caller{Authorization: c.authorization}
	}
	return serve.Caller{Subject: c.name, Scopes: c.scopes}
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

// routeAuth is a route's Authenticator when OAuth is on: the route's own
// resource server for its HTTP clients, and the admission of the
// aggregate's OAuth callers, which the aggregate's own resource server
// verified (with the scopes every endpoint requires) and which reach the
// route in-process (serve.Handler.Open): such a caller is admitted as
// itself only if its scopes cover the route's own.
type routeAuth struct {
	inner  auth.Authenticator
	scopes []string // the server's own, from the file
}

// errCallerScope refuses an aggregate's caller without the route's scopes.
var errCallerScope = errors.New("gateway: the caller lacks a scope this server requires")

func (a *routeAuth) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	return a.inner.Authenticate(w, r)
}

func (a *routeAuth) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	a.inner.ServeMetadata(w, r)
}

// AuthorizeCaller is serve.CallerAuthorizer's: the route's own scopes
// against the caller's.
func (a *routeAuth) AuthorizeCaller(subject string, scopes []string) error {
	for _, s := range a.scopes {
		if !slices.Contains(scopes, s) {
			return fmt.Errorf("%w: %s", errCallerScope, s)
		}
	}
	return nil
}

// checkCallers makes a route's OAuth resource server also admit the
// aggregate's callers in-process (routeAuth). Static-token callers need
// nothing: every route accepts the static tokens, each as its holder.
func (g *Gateway) checkCallers(cfg *serve.Config, s *teamconfig.Server) {
	if cfg.Auth == nil {
		return
	}
	cfg.Auth = &routeAuth{inner: cfg.Auth, scopes: slices.Clone(s.Options.Scopes)}
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
