package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"golang.org/x/oauth2"
)

// authorizationCode runs the browser login: client identity, PKCE, the
// authorization request through the browser, the checks on the response,
// and the code exchange.
//
// A registration is kept (in rec) as soon as it is made, so that a login
// that fails does not cost another one; a stored registration the server
// may have forgotten is checked first unless known says the server showed
// that it knows it.
func (a *Authorizer) authorizationCode(ctx context.Context, d *Discovery, rec *Record, g *Grant, scopes []string, resource string, known bool) (*Token, error) {
	md := d.Server
	if !md.SupportsPKCE() {
		// 2025-11-25 authorization §Authorization Code Protection: "If
		// code_challenge_methods_supported is absent, the authorization
		// server does not support PKCE and MCP clients MUST refuse to
		// proceed."
		return nil, fmt.Errorf("the authorization server %s does not advertise PKCE S256 (code_challenge_methods_supported); refusing to log in", md.Issuer)
	}
	if md.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %s has no authorization_endpoint", md.Issuer)
	}
	state := rand.Text()
	port := a.cfg.CallbackPort
	if port == 0 && g.Client.Source == "dynamic" {
		port = portOf(g.Client.RedirectURI) // the registered redirect URI must match
	}
	lb, err := listenLoopback(port, state)
	if err != nil && a.cfg.CallbackPort == 0 && port != 0 {
		// The registered port is taken: another port, and a new
		// registration for it.
		lb, err = listenLoopback(0, state)
	}
	if err != nil {
		return nil, err
	}
	defer lb.close()
	redirect := lb.redirectURI()

	c, err := a.identity(ctx, md, rec, g, redirect, scopes, known)
	if err != nil {
		return nil, err
	}

	// x/oauth2 builds the authorization request: response_type, client_id,
	// redirect_uri, state, and the PKCE S256 challenge of a fresh verifier.
	verifier := oauth2.GenerateVerifier()
	conf := a.oauth2Config(md, c, redirect, clientAuth{})
	conf.Scopes = scopes
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if hasScope(scopes, "offline_access") {
		// OpenID Connect Core §11: "When offline access is requested, a
		// prompt parameter value of consent MUST be used unless other
		// conditions for processing the request permitting offline access
		// to the requested resources are in place." Providers that follow
		// it (node-oidc-provider) drop offline_access without it, and then
		// issue no refresh token.
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "consent"))
	}
	if resource != "" {
		// 2026-07-28 §Resource Parameter Implementation: the resource
		// parameter "MUST be included in both authorization requests and
		// token requests".
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	authURL := withResources(conf.AuthCodeURL(state, opts...), alsoResources(ctx)) // a Group's login
	a.mu.Lock()
	a.requested = scopes
	a.mu.Unlock()

	// The URL carries no secret (PKCE sends only the challenge), so it may
	// be shown; it is always shown, for machines without a browser.
	if a.cfg.Prompt != nil {
		fmt.Fprintf(a.cfg.Prompt, "mcp-bridge: to authorize access to %s, open this URL in a browser (waiting %s):\n\n    %s\n\n", a.server, a.cfg.Timeout, authURL)
	}
	argv := browserCommand(a.cfg.Browser, authURL)
	a.cfg.Logger.Info().Str("issuer", md.Issuer).Str("browser", argv[0]).Int("callback_port", lb.port()).Strs("scopes", scopes).Msg("oauth: login required; opening the browser")
	if err := a.browsers.open(argv, a.cfg.Prompt); err != nil {
		a.cfg.Logger.Warn().Err(err).Msg("oauth: could not open a browser; open the URL printed above yourself")
	}
	resp, err := lb.wait(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no authorization response within %s (--oauth-timeout): %w", a.cfg.Timeout, err)
		}
		return nil, err
	}
	if err := checkIssuer(md, resp); err != nil {
		return nil, err
	}
	if e := resp.Get("error"); e != "" {
		desc := resp.Get("error_description")
		err := fmt.Errorf("the authorization server refused: %s: %s", oneLine(e, 64), oneLine(desc, 200))
		if e == "invalid_client" {
			err = fmt.Errorf("%w: %w", errUnknownClient, err)
		}
		return nil, err
	}
	code := resp.Get("code")
	if code == "" {
		return nil, errors.New("the authorization response has no code")
	}
	return a.exchangeCode(ctx, md, c, redirect, code, verifier, resource)
}

// checkIssuer applies RFC 9207 §2.4 as 2026-07-28 §Authorization Response
// Validation tabulates it: clients "MUST apply the validation ... before
// transmitting the authorization code to any token endpoint", compare a
// present iss "using simple string comparison", reject a missing iss when
// the metadata promises it, and "on mismatch the client MUST NOT act on or
// display error, error_description, or error_uri".
func checkIssuer(md *ServerMetadata, resp url.Values) error {
	iss, present := resp["iss"]
	switch {
	case present && (len(iss) != 1 || iss[0] != md.Issuer):
		return fmt.Errorf("the authorization response's iss does not match the issuer %s (RFC 9207): possible mix-up attack, response discarded", md.Issuer)
	case !present && md.IssParameterSupported:
		return fmt.Errorf("the authorization response has no iss though %s advertises it (RFC 9207): response discarded", md.Issuer)
	}
	return nil
}

// authMethod picks the token endpoint authentication for a configured
// client: private_key_jwt with a key, else with a secret the first of
// client_secret_basic and client_secret_post the server lists (basic if it
// lists none: RFC 6749 §2.3.1 makes it mandatory to support), else none.
func (a *Authorizer) authMethod(md *ServerMetadata, secret bool) string {
	switch {
	case a.cfg.ClientKey != nil:
		return AuthPrivateKeyJWT
	case !secret:
		return AuthNone
	case slices.Contains(md.TokenEndpointAuthMethodsSupported, AuthClientSecretBasic) || len(md.TokenEndpointAuthMethodsSupported) == 0:
		return AuthClientSecretBasic
	case slices.Contains(md.TokenEndpointAuthMethodsSupported, AuthClientSecretPost):
		return AuthClientSecretPost
	}
	return AuthClientSecretBasic
}

// refresh uses g's refresh token (RFC 6749 §6), with the resource.
func (a *Authorizer) refresh(ctx context.Context, md *ServerMetadata, g *Grant, resource string) (*Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.Token.RefreshToken}}
	if resource != "" {
		form.Set("resource", resource)
	}
	t, err := a.tokenRequest(ctx, md, &g.Client, form)
	if err != nil {
		return nil, err
	}
	if len(t.Scopes) == 0 {
		t.Scopes = g.Token.Scopes // RFC 6749 §6: unchanged when not returned
	}
	a.cfg.Logger.Info().Str("issuer", md.Issuer).Bool("rotated", t.RefreshToken != g.Token.RefreshToken).Msg("oauth: access token refreshed")
	return t, nil
}

// clientCredentials gets a token for the client itself (OAuth 2.1 §4.2).
func (a *Authorizer) clientCredentials(ctx context.Context, md *ServerMetadata, g *Grant, scopes []string, resource string) (*Token, error) {
	c := &Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, AuthMethod: a.authMethod(md, a.cfg.ClientSecret != ""), Source: "pre-registered"}
	g.Client = *c
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	a.mu.Lock()
	a.requested = scopes
	a.mu.Unlock()
	t, err := a.tokenRequest(ctx, md, c, form)
	if err != nil {
		return nil, err
	}
	a.cfg.Logger.Info().Str("issuer", md.Issuer).Str("auth_method", c.AuthMethod).Msg("oauth: client credentials token obtained")
	return t, nil
}

func portOf(redirect string) int {
	u, err := url.Parse(redirect)
	if err != nil {
		return 0
	}
	var p int
	_, _ = fmt.Sscanf(u.Port(), "%d", &p)
	return p
}
