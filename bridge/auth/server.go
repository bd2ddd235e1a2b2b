package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// Errors a verification fails with, for callers that branch on them.
// Authenticate answers ErrNoToken with a bare 401 challenge,
// ErrInsufficientScope with 403, ErrUnavailable with 503 and every other
// one with 401 invalid_token.
var (
	ErrNoToken           = errors.New("auth: no bearer token")
	ErrMalformed         = errors.New("auth: malformed token")
	ErrUnknownIssuer     = errors.New("auth: token from an issuer this server does not trust")
	ErrUnknownKey        = errors.New("auth: token signed by a key the issuer does not publish")
	ErrSignature         = errors.New("auth: bad token signature")
	ErrAudience          = errors.New("auth: token not issued for this resource")
	ErrExpired           = errors.New("auth: token expired or not yet valid")
	ErrClaims            = errors.New("auth: token lacks a required claim")
	ErrInactive          = errors.New("auth: token is not active")
	ErrNotAccessToken    = errors.New("auth: not an access token")
	ErrInsufficientScope = errors.New("auth: token lacks a required scope")
	// ErrUnavailable: the issuer or the introspection endpoint could not
	// be reached or answered nonsense; the token was neither accepted nor
	// found invalid (503).
	ErrUnavailable = errors.New("auth: authorization server unavailable")
)

// unavailable is ErrUnavailable with the time after which asking again
// may succeed (the 503's Retry-After).
type unavailable struct {
	after time.Duration
	err   error // the cause, or nil
}

func unavailableFor(after time.Duration, err error) error {
	return &unavailable{after: after, err: err}
}

func (u *unavailable) Error() string {
	if u.err == nil {
		return ErrUnavailable.Error()
	}
	return ErrUnavailable.Error() + ": " + u.err.Error()
}

func (u *unavailable) Unwrap() []error {
	if u.err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, u.err}
}

// retryAfter is the Retry-After of a 503 for err, in whole seconds (at
// least 1; 5 when err says nothing).
func retryAfter(err error) int {
	var u *unavailable
	if !errors.As(err, &u) || u.after <= 0 {
		return 5
	}
	return max(1, int((u.after+time.Second-1)/time.Second))
}

// Config configures a Server.
type Config struct {
	// Issuers are the trusted authorization servers' issuer identifiers
	// (RFC 8414), exactly as they appear in the tokens' iss claim and in
	// their metadata. At least one is required: the protected-resource
	// metadata must name one.
	Issuers []string

	// IntrospectionURL, if set, is the RFC 7662 endpoint asked about
	// tokens that are not JWTs. IntrospectionClientID/Secret authenticate
	// the bridge there (HTTP Basic).
	IntrospectionURL      string
	IntrospectionClientID string
	IntrospectionSecret   string

	// Skew is the clock leeway for exp, nbf and iat. If zero, 60s.
	Skew time.Duration

	// KeyRefetchInterval is how long a key id that a fetched key set
	// lacked is refused (401) without fetching again: each distinct
	// unknown kid prompts at most one fetch per interval, and fetches of
	// one issuer are at least a second apart whatever the tokens claim
	// (keyFetchGap). If zero, 30s; negative: no wait (tests).
	KeyRefetchInterval time.Duration

	// KeyTTL is how long a fetched key set is used before it is fetched
	// again (--oauth-key-ttl); a shorter Cache-Control max-age on the key
	// set's response wins (but is taken as at least minKeyMaxAge). If
	// zero, 1h. IssuerKeyTTL overrides it per issuer.
	KeyTTL       time.Duration
	IssuerKeyTTL map[string]time.Duration

	// KeyMaxStale bounds how long past its lifetime a key set is still
	// used while it cannot be fetched again (the issuer is down or hangs):
	// within it tokens signed by a cached key keep working and a refresh
	// runs in the background; past it they get 503. If zero, 24h.
	KeyMaxStale time.Duration

	// HTTPClient fetches metadata, keys and introspection results. If nil,
	// a client with a 10s timeout. Every body read is bounded regardless,
	// and redirects follow the outbound policy whatever its CheckRedirect.
	HTTPClient *http.Client

	// Logger receives warnings about issuers (never a token).
	Logger zerolog.Logger
}

func (c *Config) skew() time.Duration {
	if c.Skew == 0 {
		return 60 * time.Second
	}
	return c.Skew
}

func (c *Config) refetchInterval() time.Duration {
	switch {
	case c.KeyRefetchInterval == 0:
		return 30 * time.Second
	case c.KeyRefetchInterval < 0:
		return 0
	}
	return c.KeyRefetchInterval
}

func (c *Config) keyTTL(issuer string) time.Duration {
	if ttl := c.IssuerKeyTTL[issuer]; ttl > 0 {
		return ttl
	}
	if c.KeyTTL <= 0 {
		return time.Hour
	}
	return c.KeyTTL
}

func (c *Config) keyMaxStale() time.Duration {
	if c.KeyMaxStale <= 0 {
		return 24 * time.Hour
	}
	return c.KeyMaxStale
}

// A Server verifies tokens for any number of Resources.
type Server struct {
	cfg     Config
	log     zerolog.Logger
	client  *http.Client
	issuers map[string]*issuer
	intro   *introspector // nil without IntrospectionURL

	// Key sets are refreshed in the background (issuer.refresh): ctx
	// ends those fetches and wg joins them, both in Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards closed against wg.Add
	closed bool
}

// New checks cfg and returns a Server. It fetches nothing yet: the
// issuers' metadata and keys are fetched on the first token that needs
// them, so the bridge starts while an authorization server is down.
func New(cfg Config) (*Server, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("auth: at least one issuer is required")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	// The outbound policy: a redirect stays on the origin the issuer's
	// metadata (checked by checkURL) named, so keys and introspection stay
	// on https, and the introspection secret and the user's token go
	// nowhere else.
	s := &Server{cfg: cfg, log: cfg.Logger, client: outbound.Client(hc), issuers: map[string]*issuer{}}
	for _, iss := range cfg.Issuers {
		if err := checkURL("issuer", iss); err != nil {
			return nil, err
		}
		s.issuers[iss] = newIssuer(s, iss)
	}
	for iss, ttl := range cfg.IssuerKeyTTL {
		if s.issuers[iss] == nil {
			return nil, fmt.Errorf("auth: a key lifetime for %q, which is not a trusted issuer", iss)
		}
		if ttl < 0 {
			return nil, fmt.Errorf("auth: negative key lifetime for %q", iss)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.IntrospectionURL != "" {
		if err := checkURL("introspection URL", cfg.IntrospectionURL); err != nil {
			return nil, err
		}
		s.intro = newIntrospector(s)
	}
	return s, nil
}

// Close stops the background key fetches and waits for them to end.
// After Close the Server fetches nothing: tokens of cached keys still
// verify, others get ErrUnavailable.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// background runs f on a goroutine Close joins; false once closed.
func (s *Server) background(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// checkURL accepts https URLs, and http ones only on loopback (a local
// test authorization server): keys and token verdicts fetched over plain
// HTTP from elsewhere could be forged by anyone on the path.
func checkURL(what, raw string) error {
	u, err := url.Parse(raw)
	// No white space either: a principal is "<issuer> <subject>", and an
	// issuer with a space would make two of them look alike.
	if err != nil || u.Host == "" || u.Fragment != "" || u.RawQuery != "" || strings.ContainsAny(raw, " \t\r\n") {
		return fmt.Errorf("auth: %s %q: want an absolute https URL without query or fragment", what, raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if outbound.LoopbackHost(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("auth: %s %q: must be https (http only on loopback)", what, raw)
}
