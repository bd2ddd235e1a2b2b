package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// randomString is 32 random bytes, base64url: a PKCE code verifier
// (RFC 7636 §4.1: 43 characters of the unreserved set) or a state.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// s256 is the RFC 7636 §4.2 S256 code challenge of verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizationCode runs the browser login: client identity, PKCE, the
// authorization request through the browser, the checks on the response,
// and the code exchange.
func (a *Authorizer) authorizationCode(ctx context.Context, d *Discovery, g *Grant, scopes []string, resource string) (*Token, error) {
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
	state := randomString()
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

	c, err := a.client(ctx, md, g, redirect)
	if err != nil {
		return nil, err
	}
	g.Client = *c

	verifier := randomString()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {c.ID},
		"redirect_uri":          {redirect},
		"state":                 {state},
		"code_challenge":        {s256(verifier)},
		"code_challenge_method": {"S256"},
	}
	if len(scopes) > 0 {
		q.Set("scope", scopeString(scopes))
	}
	if resource != "" {
		// 2026-07-28 §Resource Parameter Implementation: the resource
		// parameter "MUST be included in both authorization requests and
		// token requests".
		q.Set("resource", resource)
	}
	authURL, err := url.Parse(md.AuthorizationEndpoint)
	if err != nil {
		return nil, err
	}
	if authURL.RawQuery != "" {
		q2 := authURL.Query()
		for k, v := range q {
			q2[k] = v
		}
		q = q2
	}
	authURL.RawQuery = q.Encode()
	a.mu.Lock()
	a.requested = scopes
	a.mu.Unlock()

	// The URL carries no secret (PKCE sends only the challenge), so it may
	// be shown; it is always shown, for machines without a browser.
	if a.cfg.Prompt != nil {
		fmt.Fprintf(a.cfg.Prompt, "mcp-bridge: to authorize access to %s, open this URL in a browser (waiting %s):\n\n    %s\n\n", a.server, a.cfg.Timeout, authURL)
	}
	argv := browserCommand(a.cfg.Browser, authURL.String())
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
		return nil, fmt.Errorf("the authorization server refused: %s: %s", oneLine(e, 64), oneLine(desc, 200))
	}
	code := resp.Get("code")
	if code == "" {
		return nil, errors.New("the authorization response has no code")
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirect},
		"code_verifier": {verifier},
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	return a.tokenRequest(ctx, md, c, form, nil)
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

// client returns the client identity to use at md's server, in the order of
// 2026-07-28 client-registration: pre-registered, Client ID Metadata
// Document when supported, dynamic registration.
func (a *Authorizer) client(ctx context.Context, md *ServerMetadata, g *Grant, redirect string) (*Client, error) {
	if a.cfg.ClientID != "" {
		return &Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, AuthMethod: a.authMethod(md, a.cfg.ClientSecret != ""), Source: "pre-registered"}, nil
	}
	if a.cfg.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported {
		m := AuthNone
		if a.cfg.ClientKey != nil {
			m = AuthPrivateKeyJWT
		}
		return &Client{ID: a.cfg.ClientMetadataURL, AuthMethod: m, Source: "metadata-document"}, nil
	}
	if g.Client.Source == "dynamic" && g.Client.ID != "" && g.Client.RedirectURI == redirect &&
		(g.Client.SecretExpiresAt == 0 || time.Unix(g.Client.SecretExpiresAt, 0).After(a.now())) {
		return &g.Client, nil
	}
	if md.RegistrationEndpoint == "" {
		if a.cfg.ClientMetadataURL != "" {
			return nil, fmt.Errorf("%s supports neither Client ID Metadata Documents nor dynamic registration; pass a pre-registered --oauth-client-id", md.Issuer)
		}
		return nil, fmt.Errorf("%s has no dynamic client registration; register a client with it and pass --oauth-client-id (and --oauth-client-secret if it has one)", md.Issuer)
	}
	return a.register(ctx, md, redirect)
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

// register performs RFC 7591 dynamic client registration as a native
// public client where the server allows it.
func (a *Authorizer) register(ctx context.Context, md *ServerMetadata, redirect string) (*Client, error) {
	method := AuthNone
	if ms := md.TokenEndpointAuthMethodsSupported; len(ms) > 0 && !slices.Contains(ms, AuthNone) {
		switch {
		case slices.Contains(ms, AuthClientSecretBasic):
			method = AuthClientSecretBasic
		case slices.Contains(ms, AuthClientSecretPost):
			method = AuthClientSecretPost
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":    a.cfg.ClientName,
		"redirect_uris":  []string{redirect},
		"grant_types":    []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"},
		// 2026-07-28 client-registration: "MCP clients MUST specify an
		// appropriate application_type during Dynamic Client
		// Registration"; CLI tools "SHOULD use application_type: native".
		"application_type":           "native",
		"token_endpoint_auth_method": method,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	status, b, err := a.exchange(req)
	if err != nil {
		return nil, fmt.Errorf("dynamic client registration: %w", err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return nil, fmt.Errorf("dynamic client registration at %s: %w", md.RegistrationEndpoint, parseErrorResponse("registration", status, b))
	}
	c, err := ParseRegistration(b)
	if err != nil {
		return nil, err
	}
	if c.AuthMethod == "" {
		c.AuthMethod = method
		if c.Secret != "" && method == AuthNone {
			c.AuthMethod = AuthClientSecretBasic
		}
	}
	c.RedirectURI = redirect
	c.Source = "dynamic"
	a.cfg.Logger.Info().Str("issuer", md.Issuer).Str("auth_method", c.AuthMethod).Msg("oauth: registered a client")
	return c, nil
}

// ParseRegistration decodes a client information response (RFC 7591 §3.2.1).
func ParseRegistration(b []byte) (*Client, error) {
	var r struct {
		ClientID        string  `json:"client_id"`
		ClientSecret    string  `json:"client_secret"`
		AuthMethod      string  `json:"token_endpoint_auth_method"`
		SecretExpiresAt float64 `json:"client_secret_expires_at"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: registration response: %v", ErrMetadata, err)
	}
	if r.ClientID == "" {
		return nil, fmt.Errorf("%w: registration response has no client_id", ErrMetadata)
	}
	switch r.AuthMethod {
	case "", AuthNone, AuthClientSecretBasic, AuthClientSecretPost:
	default:
		return nil, fmt.Errorf("%w: registration response: unsupported token_endpoint_auth_method %q", ErrMetadata, oneLine(r.AuthMethod, 40))
	}
	c := &Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.AuthMethod}
	if r.SecretExpiresAt > 0 && r.SecretExpiresAt < 1e12 {
		c.SecretExpiresAt = int64(r.SecretExpiresAt)
	}
	return c, nil
}

// refresh uses g's refresh token (RFC 6749 §6), with the resource.
func (a *Authorizer) refresh(ctx context.Context, md *ServerMetadata, g *Grant, resource string) (*Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.Token.RefreshToken}}
	if resource != "" {
		form.Set("resource", resource)
	}
	t, err := a.tokenRequest(ctx, md, &g.Client, form, &g.Token)
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
	t, err := a.tokenRequest(ctx, md, c, form, nil)
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
