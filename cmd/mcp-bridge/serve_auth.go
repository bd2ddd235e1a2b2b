package main

import (
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// serveAuthFlags are serve's inbound authentication beyond --auth-token:
// a file of named tokens and an OAuth resource server.
type serveAuthFlags struct {
	tokenFile        string
	issuers, scopes  []string
	publicURL        string
	introspectionURL string
	keyTTL           time.Duration
	maxPrincipals    int

	rs *auth.Server // built by server; close ends its key fetches
}

// The introspection endpoint's client credentials come from the
// environment only: argv is visible to every local user.
const (
	envIntrospectionID     = "MCP_BRIDGE_INTROSPECTION_CLIENT_ID"
	envIntrospectionSecret = "MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET"
)

func (a *serveAuthFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.tokenFile, "auth-token-file", "", "`file` of accepted bearer tokens, one per line as NAME:TOKEN or TOKEN ('#' comments); the name is the principal in logs; re-read on SIGHUP; keep it chmod 600")
	fs.StringArrayVar(&a.issuers, "oauth-issuer", nil, "trusted OAuth authorization server (issuer `URL`, repeatable): accept its JWT access tokens for --public-url and publish RFC 9728 metadata naming it")
	fs.StringVar(&a.publicURL, "public-url", "", "the endpoint's canonical `URL` as clients reach it (e.g. https://mcp.example.com/mcp): tokens must name it in aud")
	fs.StringArrayVar(&a.scopes, "oauth-scope", nil, "`scope` every OAuth token must grant (repeatable; 403 insufficient_scope otherwise)")
	fs.StringVar(&a.introspectionURL, "oauth-introspection-url", "", "RFC 7662 introspection `URL` for opaque (non-JWT) tokens; its client id and secret from "+envIntrospectionID+" / "+envIntrospectionSecret)
	fs.DurationVar(&a.keyTTL, "oauth-key-ttl", time.Hour, "how long an issuer's signing keys are used before they are fetched again (a shorter Cache-Control max-age of the key set wins); cached keys keep answering while a refresh runs")
	fs.IntVar(&a.maxPrincipals, "max-principals", 100, "with --child-per principal, most principals with a child of their own (503 for a new one above it)")
}

// enabled reports whether any inbound credential besides --auth-token is
// configured (so a non-loopback --listen is protected).
func (a *serveAuthFlags) enabled() bool { return a.tokenFile != "" || len(a.issuers) > 0 }

// authFetchTimeout bounds each fetch of an issuer's metadata or keys and
// each introspection (bridge/auth's own default when no --ca-file is given).
const authFetchTimeout = 10 * time.Second

// server checks the flags, fills cfg's NamedTokens and MaxPrincipals,
// and returns the OAuth resource server, or nil without --oauth-issuer;
// it fetches with hc (nil: bridge/auth's default client). what names
// --public-url's meaning in the error when it is missing; issuers are
// the config file's per-issuer settings (nil without --config).
func (a *serveAuthFlags) server(cfg *serve.Config, hc *http.Client, log zerolog.Logger, what string, issuers map[string]teamconfig.IssuerOptions) (*auth.Server, error) {
	cfg.MaxPrincipals = a.maxPrincipals
	if a.tokenFile != "" {
		tokens, err := readTokenFile(a.tokenFile, log)
		if err != nil {
			return nil, err
		}
		cfg.NamedTokens = tokens
	}
	if a.keyTTL <= 0 {
		return nil, usagef("--oauth-key-ttl must be positive")
	}
	if len(a.issuers) == 0 {
		if a.publicURL != "" || len(a.scopes) > 0 || a.introspectionURL != "" {
			return nil, usagef("--public-url, --oauth-scope and --oauth-introspection-url need --oauth-issuer")
		}
		if len(issuers) > 0 {
			return nil, usagef("the config file's mcpBridge.oauthIssuers needs --oauth-issuer")
		}
		return nil, nil
	}
	if a.publicURL == "" {
		return nil, usagef("--oauth-issuer needs --public-url: %s", what)
	}
	var perIssuer map[string]time.Duration
	for iss, o := range issuers {
		if perIssuer == nil {
			perIssuer = map[string]time.Duration{}
		}
		perIssuer[iss] = time.Duration(o.KeyTTL)
	}
	s, err := auth.New(auth.Config{
		Issuers:               a.issuers,
		IntrospectionURL:      a.introspectionURL,
		IntrospectionClientID: os.Getenv(envIntrospectionID),
		IntrospectionSecret:   os.Getenv(envIntrospectionSecret),
		KeyTTL:                a.keyTTL,
		IssuerKeyTTL:          perIssuer,
		HTTPClient:            hc,
		Logger:                log.With().Str("src", "rsauth").Logger(),
	})
	if err != nil {
		return nil, usageError{err}
	}
	a.rs = s
	return s, nil
}

// close stops the resource server's background key fetches, if there is
// one.
func (a *serveAuthFlags) close() {
	if a.rs != nil {
		a.rs.Close()
	}
}

// apply checks the flags and fills cfg's NamedTokens and Auth.
func (a *serveAuthFlags) apply(cfg *serve.Config, hc *http.Client, log zerolog.Logger) error {
	s, err := a.server(cfg, hc, log, "the URL clients reach this endpoint at, which tokens must name as their audience", nil)
	if s == nil || err != nil {
		return err
	}
	rs, err := s.Resource(a.publicURL, a.scopes)
	if err != nil {
		return usageError{err}
	}
	cfg.Auth = rs
	if p := cfg.Path; p != "" && !strings.HasSuffix(rs.MetadataURL(), auth.WellKnown+p) {
		log.Warn().Str("metadata", rs.MetadataURL()).Str("served_at", auth.WellKnown+p).
			Msg("--public-url's path differs from --path: a proxy in front must map the metadata URL to where it is served")
	}
	log.Info().Strs("issuers", a.issuers).Str("resource", rs.URI()).Str("metadata", rs.MetadataURL()).
		Strs("scopes", a.scopes).Bool("introspection", a.introspectionURL != "").Msg("OAuth resource server")
	return nil
}

// forGateway is apply for serve --config: the token file's tokens, and an
// OAuth resource server per endpoint. --public-url is then the bridge's
// base URL (https://mcp.example.com): each endpoint's resource is that
// base plus its path (/servers/<name>/mcp, /mcp), and the scopes of
// mcpBridge.servers.<name>.scopes add to --oauth-scope. The file's
// mcpBridge.oauthIssuers set key lifetimes per issuer.
func (a *serveAuthFlags) forGateway(cfg *serve.Config, file *teamconfig.Config, hc *http.Client, log zerolog.Logger) (func(path string, scopes []string) (auth.Authenticator, error), error) {
	s, err := a.server(cfg, hc, log, "with --config, the base URL clients reach the bridge at (e.g. https://mcp.example.com); each endpoint's path is added to it", file.OAuthIssuers)
	if s == nil || err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(a.publicURL, "/")
	log.Info().Strs("issuers", a.issuers).Str("base", base).Strs("scopes", a.scopes).
		Bool("introspection", a.introspectionURL != "").Msg("OAuth resource server for every endpoint")
	return func(path string, scopes []string) (auth.Authenticator, error) {
		rs, err := s.Resource(base+path, append(slices.Clone(a.scopes), scopes...))
		if err != nil {
			return nil, err
		}
		return rs, nil
	}, nil
}

func readTokenFile(path string, log zerolog.Logger) ([]auth.NamedToken, error) {
	tokens, warning, err := auth.ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		log.Warn().Str("file", path).Msg(warning)
	}
	return tokens, nil
}

// watch re-reads the token file on SIGHUP until the returned stop is
// called; a file that no longer parses leaves the tokens as they were.
func (a *serveAuthFlags) watch(h *serve.Handler, log zerolog.Logger) (stop func()) {
	if a.tokenFile == "" {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-hup:
				tokens, err := readTokenFile(a.tokenFile, log)
				if err != nil {
					log.Error().Err(err).Msg("token file not re-read; the tokens stay as they were")
					continue
				}
				h.SetTokens(tokens)
				log.Info().Str("file", a.tokenFile).Int("tokens", len(tokens)).Msg("token file re-read")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-exited
	}
}
