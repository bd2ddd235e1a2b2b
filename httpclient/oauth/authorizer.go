package oauth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// Grant types for [Config.Grant].
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	// GrantDeviceCode is the device authorization grant (RFC 8628): a
	// person enters a code on another device; nothing opens here.
	GrantDeviceCode = "device_code"
)

// Defaults for zero Config fields.
const (
	DefaultTimeout    = 5 * time.Minute
	DefaultMaxStepUps = 2
	defaultClientName = "mcp-bridge"

	// ReloginInterval is how long after a browser login whose token the
	// server never accepted no other browser login starts: a server that
	// refuses every fresh token (a wrong audience, a clock skew) would
	// otherwise open one browser tab per request.
	ReloginInterval = 5 * time.Minute
)

// Config configures the OAuth client for one MCP server.
type Config struct {
	// ServerURL is the MCP endpoint. Required.
	ServerURL string

	// ClientID and ClientSecret are a pre-registered client; ClientKey
	// signs private_key_jwt client assertions instead of a secret.
	ClientID     string
	ClientSecret string
	ClientKey    crypto.Signer

	// ClientMetadataURL is this client's Client ID Metadata Document, used
	// as client_id when the authorization server supports them.
	ClientMetadataURL string

	// Resource overrides the RFC 8707 resource; NoResource omits it, for
	// authorization servers that reject it.
	Resource   string
	NoResource bool

	// Scopes, if set, replace the scope selection strategy.
	Scopes []string

	// Grant is GrantAuthorizationCode (default), GrantClientCredentials or
	// GrantDeviceCode.
	Grant string

	// Browser is the command that opens the authorization URL (the URL is
	// appended); nil means $BROWSER, else the platform opener.
	Browser []string

	// CallbackPort is the loopback redirect URI's port; 0 means the port
	// registered before, else any free one.
	CallbackPort int

	// Timeout bounds one interactive login; zero means DefaultTimeout.
	Timeout time.Duration

	// MaxStepUps bounds re-authorizations after 403 insufficient_scope
	// for one request; zero means DefaultMaxStepUps, negative none.
	MaxStepUps int

	// Store persists registrations and tokens; nil keeps them in memory.
	Store *Store

	// HTTPClient sends discovery, registration and token requests; nil
	// means a client with a 30s timeout. It must not be the client whose
	// transport is this package's [Transport]. Its redirects follow the
	// outbound policy whatever its CheckRedirect.
	HTTPClient *http.Client

	// ClientName is the client_name sent at registration.
	ClientName string

	// Prompt receives the "open this URL" line (or the device grant's
	// verification URI and user code) for a person (stderr); nil discards
	// it.
	Prompt io.Writer

	// Logger receives logs; tokens, codes and secrets are never logged.
	Logger zerolog.Logger

	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time

	// DeviceNotice, if set, is also told the device grant's verification
	// URI and user code (never the device code), for a person who watches
	// the host rather than stderr (connect: an MCP log notification).
	DeviceNotice func(server string, d DeviceNotice)

	// Group, if set, shares browser logins and refresh tokens with the
	// other Authorizers of the group (see [Group]).
	Group *Group
}

// ErrLogin is matched by every [*LoginError].
var ErrLogin = errors.New("oauth: login failed")

// A LoginError reports a failed or timed-out login for a server. It
// matches [ErrLogin] and nothing else with errors.Is/As: a network error
// inside it concerns the authorization server, and must not make a caller
// retry the MCP request (which would start another login).
type LoginError struct {
	Server string
	Err    error
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("oauth: login to %s failed: %v", e.Server, e.Err)
}

// Unwrap exposes only ErrLogin (see the type comment): not even a
// context error, since the login's own timeout is not the request's.
func (e *LoginError) Unwrap() error { return ErrLogin }

// Cause returns the underlying error.
func (e *LoginError) Cause() error { return e.Err }

// An Authorizer holds the OAuth state for one MCP server: the current
// grant, the discovery results, and the login in progress. It is safe for
// concurrent use; requests that need a token while a login runs wait for
// that login rather than starting their own.
type Authorizer struct {
	cfg    Config
	server string // canonical server URL: the store key

	mu        sync.Mutex
	loaded    bool
	grant     *Grant        // the grant in use; nil before any
	gen       uint64        // bumped whenever grant's token changes
	disc      *Discovery    // cached discovery
	discURL   string        // the resource_metadata URL disc came from
	requested []string      // scopes of the last authorization request
	running   chan struct{} // non-nil while a login runs; closed at its end
	attempts  uint64        // logins finished
	lastErr   error         // the last login's error, nil if it worked
	mem       *Record       // the record when there is no Store
	loginAt   time.Time     // the last browser login that gave a token
	loginGen  uint64        // the generation of that login's token
	accepted  uint64        // the newest generation the server accepted

	knownClients map[string]time.Time // client id -> when the token endpoint last issued it a token

	sem chan struct{} // one login at a time in this process

	ctx      context.Context // ends at Close: logins are not bound to one request
	cancel   context.CancelFunc
	browsers browsers
	defHC    *http.Client // cfg.HTTPClient under the outbound policy
	// serverURL is cfg.ServerURL parsed: Transport sends tokens to its
	// origin only.
	serverURL *url.URL
	// sleep waits between device grant polls; tests replace it so that
	// the intervals are checked without being waited out.
	sleep func(ctx context.Context, d time.Duration) error
}

// New makes an Authorizer. Close it to stop a login in progress.
func New(cfg Config) (*Authorizer, error) {
	server, err := CanonicalResource(cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	switch cfg.Grant {
	case "":
		cfg.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantDeviceCode:
	case GrantClientCredentials:
		if cfg.ClientID == "" || (cfg.ClientSecret == "" && cfg.ClientKey == nil) {
			return nil, errors.New("oauth: the client_credentials grant needs a client id and a secret or a key")
		}
	default:
		return nil, fmt.Errorf("oauth: unknown grant %q", cfg.Grant)
	}
	if cfg.ClientMetadataURL != "" {
		// 2026-07-28 client-registration: "The client_id URL MUST use the
		// "https" scheme and contain a path component".
		if u, err := url.Parse(cfg.ClientMetadataURL); err != nil || u.Scheme != "https" || !httpURL(cfg.ClientMetadataURL) || strings.TrimPrefix(u.EscapedPath(), "/") == "" {
			return nil, fmt.Errorf("oauth: client metadata URL %q must be an https URL with a path", cfg.ClientMetadataURL)
		}
	}
	if cfg.Resource != "" && !httpURL(cfg.Resource) {
		return nil, fmt.Errorf("oauth: resource %q is not an http(s) URL without a fragment", cfg.Resource)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxStepUps == 0 {
		cfg.MaxStepUps = DefaultMaxStepUps
	}
	if cfg.ClientName == "" {
		cfg.ClientName = defaultClientName
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	serverURL, err := url.Parse(cfg.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: server URL: %w", err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Authorizer{cfg: cfg, server: server, sem: make(chan struct{}, 1), ctx: ctx, cancel: cancel, defHC: outbound.Client(hc), serverURL: serverURL, sleep: sleepCtx}
	cfg.Group.join(a)
	return a, nil
}

// Close cancels a login in progress and waits (up to 2s) for browser
// commands this Authorizer started to exit.
func (a *Authorizer) Close() error {
	a.cfg.Group.leave(a)
	a.cancel()
	// Take the login slot: once we hold it, no login runs.
	a.sem <- struct{}{}
	<-a.sem
	if err := a.browsers.close(context.Background(), 2*time.Second); err != nil {
		a.cfg.Logger.Debug().Err(err).Msg("oauth: not waiting for the browser command")
	}
	return nil
}

// Server returns the canonical server URL the Authorizer stores tokens under.
func (a *Authorizer) Server() string { return a.server }

func (a *Authorizer) now() time.Time { return a.cfg.Now() }

// exchange sends a request to an authorization server's endpoint and
// returns the answer's status and body (at most maxDocument bytes; an
// endpoint answers small JSON documents, and a hostile one must not make
// the bridge hold more).
func (a *Authorizer) exchange(req *http.Request) (int, []byte, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	return resp.StatusCode, b, err
}

// hc is the client of discovery, registration and token requests:
// cfg.HTTPClient (or one with a 30s timeout) under the outbound policy, so
// that a redirect takes a client secret, an authorization code or a
// registration to no other origin, and never off https.
func (a *Authorizer) hc() *http.Client { return a.defHC }

// Token returns the access token to send and its generation, waiting for
// a login in progress. "" means no token yet: the request goes out
// without one and its 401 starts the login. A login that failed while the
// caller waited gives that login's error.
func (a *Authorizer) Token(ctx context.Context) (string, uint64, error) {
	a.mu.Lock()
	waited := false
	for a.running != nil {
		ch := a.running
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
		waited = true
		a.mu.Lock()
	}
	if waited && a.lastErr != nil {
		err := a.lastErr
		a.mu.Unlock()
		return "", 0, err
	}
	if !a.loaded {
		a.loaded = true
		if a.cfg.Store != nil {
			if rec, err := a.cfg.Store.Load(a.server); err == nil {
				a.grant = a.pick(rec, "")
			} else {
				a.cfg.Logger.Warn().Err(err).Msg("oauth: token store unreadable; logging in afresh")
			}
		}
	}
	var tok string
	expired := false
	if a.grant != nil {
		tok = a.grant.Token.AccessToken
		expired = a.grant.Token.expired(a.now()) && a.grant.Token.RefreshToken != ""
	}
	gen := a.gen
	a.mu.Unlock()
	if expired {
		// Refresh before sending rather than after a 401. If that ends in a
		// failed login, the request fails with it: sending the expired
		// token would only start a second login.
		if err := a.Handle(ctx, gen, http.StatusUnauthorized, nil); err != nil {
			return "", 0, err
		}
		return a.Token(ctx)
	}
	return tok, gen, nil
}

// pick chooses the stored grant to use: the one for issuer (and this
// client, if pre-registered or a metadata document), or with issuer "",
// the most recent one with a token.
func (a *Authorizer) pick(rec *Record, issuer string) *Grant {
	var g *Grant
	if issuer == "" {
		g = rec.latest()
		if g != nil && a.cfg.ClientID != "" && g.Client.ID != a.cfg.ClientID {
			g = nil
		}
	} else {
		g = rec.grant(issuer, a.cfg.ClientID) // "": a registered client
	}
	if g == nil {
		return nil
	}
	c := *g
	return &c
}

// ErrNotOurs reports a 403 that is not an insufficient_scope challenge: not
// an authorization problem this client can solve.
var ErrNotOurs = errors.New("oauth: not an authorization challenge")

// Handle reacts to a 401 or 403 (status) with headers h for a request sent
// with the token of generation gen: it adopts a token another request or
// process got meanwhile, refreshes, or logs in, and returns nil when a new
// token is ready. Concurrent calls share one login.
func (a *Authorizer) Handle(ctx context.Context, gen uint64, status int, h http.Header) error {
	ch, _ := Bearer(h)
	if status == http.StatusForbidden && ch.Params["error"] != "insufficient_scope" {
		return ErrNotOurs
	}
	a.mu.Lock()
	seen := a.attempts
	a.mu.Unlock()
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-a.ctx.Done():
		return &LoginError{Server: a.server, Err: errors.New("the bridge is shutting down")}
	}
	defer func() { <-a.sem }()

	a.mu.Lock()
	if a.gen != gen {
		a.mu.Unlock()
		return nil // someone else renewed the token meanwhile
	}
	if a.attempts != seen && a.lastErr != nil {
		err := a.lastErr // the login this request waited for failed: do not open another
		a.mu.Unlock()
		return err
	}
	done := make(chan struct{})
	a.running = done
	var failed string
	if a.grant != nil {
		failed = a.grant.Token.AccessToken
	}
	a.mu.Unlock()

	t0 := time.Now()
	lctx, cancel := context.WithTimeout(a.ctx, a.cfg.Timeout)
	g, interactive, err := a.renew(lctx, status, ch, failed, false)
	cancel()
	if err != nil && !errors.Is(err, ErrLogin) {
		err = &LoginError{Server: a.server, Err: err}
	}

	a.mu.Lock()
	a.attempts++
	a.lastErr = err
	if err == nil {
		a.grant = g
		a.gen++
		if interactive {
			a.loginAt, a.loginGen = a.now(), a.gen
		}
	}
	a.running = nil
	close(done)
	a.mu.Unlock()
	if err != nil {
		a.cfg.Logger.Error().Err(err).Int64("took_ms", time.Since(t0).Milliseconds()).Msg("oauth: no token")
		return err
	}
	a.cfg.Logger.Debug().Str("issuer", g.Issuer).Strs("scopes", g.Token.Scopes).Int64("took_ms", time.Since(t0).Milliseconds()).Msg("oauth: token ready")
	return nil
}

// renew does the work of Handle under the in-process and cross-process
// locks; interactive reports that the grant came from a browser login.
func (a *Authorizer) renew(ctx context.Context, status int, ch Challenge, failed string, force bool) (g *Grant, interactive bool, err error) {
	disc, err := a.discovery(ctx, ch)
	if err != nil {
		return nil, false, err
	}
	issuer := disc.Server.Issuer
	scopes := a.scopes(disc, ch, status)

	release, err := a.cfg.Group.hold(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	if a.cfg.Store != nil {
		unlock, err := a.cfg.Store.Lock(ctx, a.server)
		if err != nil {
			return nil, false, err
		}
		defer unlock()
	}
	rec, err := a.record()
	if err != nil {
		return nil, false, err
	}
	g = a.pick(rec, issuer)
	if !force && g != nil && g.Token.AccessToken != "" && g.Token.AccessToken != failed && !g.Token.expired(a.now()) &&
		(status != http.StatusForbidden || coversScopes(g.Token.Scopes, scopes)) {
		// Another process logged in while this one waited for the lock.
		a.cfg.Logger.Info().Str("issuer", issuer).Msg("oauth: using the token another mcp-bridge process obtained")
		return g, false, nil
	}
	if g == nil {
		g = &Grant{Issuer: issuer}
	}
	resource := a.resource(disc)
	g.Resource = resource

	known := false // the authorization server showed that it knows g.Client
	if !force && status != http.StatusForbidden && g.Token.RefreshToken != "" && a.cfg.Grant != GrantClientCredentials {
		t, err := a.refresh(ctx, disc.Server, g, resource)
		if err == nil {
			a.cfg.Group.rotated(ctx, a, issuer, g.Client.ID, g.Token.RefreshToken, t.RefreshToken)
			g.Token = *t
			return g, false, a.save(rec, g)
		}
		var te *TokenError
		if !errors.As(err, &te) {
			return nil, false, err
		}
		// invalid_grant and friends: the refresh token is dead (revoked,
		// expired, rotated away); a new login is the way out.
		a.cfg.Logger.Info().Str("issuer", issuer).Str("error", te.Code).Msg("oauth: refresh token rejected; logging in again")
		g.Token = Token{}
		if forgotten(err) {
			a.forget(rec, g)
		} else {
			known = true
		}
	}

	var t *Token
	if a.cfg.Grant == GrantClientCredentials {
		t, err = a.clientCredentials(ctx, disc.Server, g, scopes, resource)
	} else {
		if !force && status == http.StatusUnauthorized {
			if err := a.reloginAllowed(ch); err != nil {
				return nil, false, err
			}
		}
		if a.cfg.Grant == GrantDeviceCode {
			t, err = a.deviceCode(ctx, disc.Server, rec, g, scopes, resource, known)
		} else {
			t, err = a.cfg.Group.authorizationCode(ctx, a, disc, rec, g, scopes, resource, known)
		}
		interactive = true
	}
	if err != nil {
		if forgotten(err) {
			a.forget(rec, g)
		}
		return nil, false, staticTokenHint(err, disc, ch)
	}
	g.Token = *t
	return g, interactive, a.save(rec, g)
}

// record loads the stored record, or with no Store the one in memory.
func (a *Authorizer) record() (*Record, error) {
	if a.cfg.Store != nil {
		return a.cfg.Store.Load(a.server)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mem == nil {
		a.mem = &Record{Server: a.server}
	}
	c := &Record{Server: a.server, Grants: slices.Clone(a.mem.Grants)}
	return c, nil
}

// reloginAllowed refuses a browser login while the last one's token, from
// less than ReloginInterval ago, was never accepted by the server: the
// server refuses fresh tokens, and another login would only give another.
// The server's own words from ch, if any, go into the error.
func (a *Authorizer) reloginAllowed(ch Challenge) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loginAt.IsZero() || a.accepted >= a.loginGen {
		return nil
	}
	ago := a.now().Sub(a.loginAt)
	if ago >= ReloginInterval {
		return nil
	}
	said := ""
	if d := ch.Params["error_description"]; d != "" {
		said = fmt.Sprintf(" (it says: %q)", oneLine(d, 200))
	}
	return fmt.Errorf("%w: the server refused the token of the browser login %s ago%s; no other login before %s (check the server's audience/resource and issuer settings)",
		ErrRefused, ago.Round(time.Second), said, (ReloginInterval - ago).Round(time.Second))
}

// ErrRefused is matched when the server refused a freshly obtained token
// and no new browser login is started for it.
var ErrRefused = errors.New("oauth: the server refuses fresh tokens")

// accept records that the server accepted the token of generation gen.
func (a *Authorizer) accept(gen uint64) {
	a.mu.Lock()
	if gen > a.accepted {
		a.accepted = gen
	}
	a.mu.Unlock()
}

// save stores g (stamped now) in rec and writes rec.
func (a *Authorizer) save(rec *Record, g *Grant) error {
	g.Updated = a.now().UTC()
	rec.put(*g)
	if err := a.write(rec); err != nil {
		// The token works for this process; only later runs lose it.
		a.cfg.Logger.Warn().Err(err).Msg("oauth: could not save the token")
	}
	return nil
}

// write keeps rec in the Store, or in memory without one.
func (a *Authorizer) write(rec *Record) error {
	if a.cfg.Store == nil {
		a.mu.Lock()
		a.mem = &Record{Server: rec.Server, Grants: slices.Clone(rec.Grants)}
		a.mu.Unlock()
		return nil
	}
	return a.cfg.Store.Save(rec)
}

// discovery returns the cached discovery, or discovers again when there is
// none or the challenge names another resource_metadata URL.
func (a *Authorizer) discovery(ctx context.Context, ch Challenge) (*Discovery, error) {
	rm := ch.Params["resource_metadata"]
	a.mu.Lock()
	d, url := a.disc, a.discURL
	a.mu.Unlock()
	if d != nil && (rm == "" || rm == url) {
		return d, nil
	}
	d, err := a.discover(ctx, ch)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.disc, a.discURL = d, rm
	a.mu.Unlock()
	a.cfg.Logger.Debug().Str("issuer", d.Server.Issuer).Bool("fallback_endpoints", d.Server.Fallback).Msg("oauth: discovered the authorization server")
	return d, nil
}

// scopes applies the scope selection strategy of 2026-07-28 authorization
// §Scope Selection Strategy, and for a 403 the step-up rule: "Determine
// required scopes by computing the union of the client's previously
// requested scope set and the scopes from the current challenge."
func (a *Authorizer) scopes(d *Discovery, ch Challenge, status int) []string {
	challenged := strings.Fields(ch.Params["scope"])
	var s []string
	switch {
	case len(a.cfg.Scopes) > 0:
		s = unionScopes(a.cfg.Scopes, nil)
	case len(challenged) > 0:
		// "Clients MUST treat the scopes provided in the challenge as
		// authoritative for the current operation."
		s = challenged
	case d.Resource != nil && len(d.Resource.ScopesSupported) > 0:
		s = d.Resource.ScopesSupported
	}
	a.mu.Lock()
	prev := a.requested
	a.mu.Unlock()
	if status == http.StatusForbidden {
		s = unionScopes(prev, unionScopes(s, challenged))
	}
	// 2026-07-28 §Refresh Tokens: clients "MAY add offline_access to the
	// scope parameter ... when the Authorization Server metadata contains
	// it in scopes_supported". Without it many servers issue no refresh
	// token, and every expiry would mean a browser login.
	if a.cfg.Grant != GrantClientCredentials && hasScope(d.Server.ScopesSupported, "offline_access") && !hasScope(s, "offline_access") {
		s = append(append([]string(nil), s...), "offline_access")
	}
	return s
}

// coversScopes reports whether granted includes every scope of want.
func coversScopes(granted, want []string) bool {
	for _, s := range want {
		if !hasScope(granted, s) {
			return false
		}
	}
	return true
}

// resource is the RFC 8707 resource to send, "" for none.
func (a *Authorizer) resource(d *Discovery) string {
	switch {
	case a.cfg.NoResource:
		return ""
	case a.cfg.Resource != "":
		return a.cfg.Resource
	case d.Resource != nil && d.Resource.Resource != "":
		// The protected resource's own identifier (RFC 9728 §2), checked
		// to cover the endpoint in discover.
		return d.Resource.Resource
	}
	return a.server
}
