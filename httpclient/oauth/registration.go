package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// errUnknownClient is matched when the authorization server showed that
// it does not know the client id (an authorization response with
// invalid_client).
var errUnknownClient = errors.New("oauth: the authorization server does not know the client")

// forgotten reports an error that proves the authorization server no
// longer knows the client: RFC 6749 §5.2 invalid_client ("Client
// authentication failed (e.g., unknown client, no client authentication
// included, or unsupported authentication method)") from the token
// endpoint, or invalid_client in an authorization response.
func forgotten(err error) bool {
	var te *TokenError
	if errors.As(err, &te) && te.Endpoint == "token" && te.Code == "invalid_client" {
		return true
	}
	return errors.Is(err, errUnknownClient)
}

// identity returns the client to log in with and sets g.Client to it. A
// new registration is stored at once; a stored one is first checked with
// the token endpoint (unless known), and registered anew only when that
// proves it forgotten.
func (a *Authorizer) identity(ctx context.Context, md *ServerMetadata, rec *Record, g *Grant, redirect string, scopes []string, known bool) (*Client, error) {
	c, fresh, err := a.client(ctx, md, g, redirect, scopes)
	if err != nil {
		return nil, err
	}
	if !fresh && c.Source == "dynamic" && !known && !a.isKnown(c.ID) {
		if err := a.probe(ctx, md, c, redirect); forgotten(err) {
			a.cfg.Logger.Info().Str("issuer", md.Issuer).Msg("oauth: the authorization server no longer knows the registered client; registering again")
			a.forget(rec, g)
			if c, err = a.register(ctx, md, redirect, scopes); err != nil {
				return nil, err
			}
			fresh = true
		} else if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	g.Client = *c
	if fresh && c.Source == "dynamic" {
		// Kept before the browser opens: a login that fails (a timeout, a
		// refusal) must not make the next attempt register yet another
		// client.
		keep := *g
		keep.Token = Token{}
		keep.Updated = a.now().UTC()
		rec.put(keep)
		if err := a.write(rec); err != nil {
			a.cfg.Logger.Warn().Err(err).Msg("oauth: could not save the registration")
		}
	}
	return c, nil
}

// probe asks the token endpoint to redeem a refresh token that does not
// exist with c's credentials. A server that knows c answers invalid_grant;
// one that forgot it answers invalid_client (RFC 6749 §5.2, "unknown
// client"). It costs one request and spares the person the forgotten
// client's error page for the whole login timeout. A refresh token rather
// than a code: a made-up code would look like a PKCE failure to a server
// that audits those. A server that lists grant types without
// refresh_token gets a made-up code instead.
func (a *Authorizer) probe(ctx context.Context, md *ServerMetadata, c *Client, redirect string) error {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"mcp-bridge-registration-check-" + rand.Text()}}
	if len(md.GrantTypesSupported) > 0 && !slices.Contains(md.GrantTypesSupported, "refresh_token") {
		form = url.Values{
			"grant_type":    {"authorization_code"},
			"code":          {"mcp-bridge-registration-check-" + rand.Text()},
			"redirect_uri":  {redirect},
			"code_verifier": {oauth2.GenerateVerifier()},
		}
	}
	_, err := a.tokenRequest(ctx, md, c, form)
	return err
}

// knownFor is how long a token issued to a client counts as proof that
// the authorization server knows it: long enough for the step-up logins
// that follow a login at once, short enough that a server reset while a
// connect runs is still noticed.
const knownFor = time.Minute

// isKnown reports whether the token endpoint issued a token to client id
// in this process within knownFor: no need to check it again.
func (a *Authorizer) isKnown(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.knownClients[id]
	return ok && a.now().Sub(at) < knownFor
}

// markKnown records a token issued to client id.
func (a *Authorizer) markKnown(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.knownClients == nil {
		a.knownClients = map[string]time.Time{}
	}
	a.knownClients[id] = a.now()
}

// forget removes g's dynamic registration from rec and the store.
func (a *Authorizer) forget(rec *Record, g *Grant) {
	if g.Client.Source != "dynamic" {
		return
	}
	id := g.Client.ID
	a.mu.Lock()
	delete(a.knownClients, id)
	a.mu.Unlock()
	rec.Grants = slices.DeleteFunc(rec.Grants, func(o Grant) bool { return o.Issuer == g.Issuer && o.Client.ID == id })
	g.Client = Client{}
	if err := a.write(rec); err != nil {
		a.cfg.Logger.Warn().Err(err).Msg("oauth: could not drop the forgotten registration")
	}
}

// client returns the client identity to use at md's server, in the order of
// 2026-07-28 client-registration: pre-registered, Client ID Metadata
// Document when supported, dynamic registration. fresh reports a
// registration made now.
func (a *Authorizer) client(ctx context.Context, md *ServerMetadata, g *Grant, redirect string, scopes []string) (c *Client, fresh bool, err error) {
	if a.cfg.ClientID != "" {
		return &Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, AuthMethod: a.authMethod(md, a.cfg.ClientSecret != ""), Source: "pre-registered"}, false, nil
	}
	if a.cfg.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported {
		m := AuthNone
		if a.cfg.ClientKey != nil {
			m = AuthPrivateKeyJWT
		}
		return &Client{ID: a.cfg.ClientMetadataURL, AuthMethod: m, Source: "metadata-document"}, false, nil
	}
	if g.Client.Source == "dynamic" && g.Client.ID != "" && g.Client.RedirectURI == redirect &&
		(g.Client.SecretExpiresAt == 0 || time.Unix(g.Client.SecretExpiresAt, 0).After(a.now())) &&
		(g.Client.Scope == "" || coversScopes(strings.Fields(g.Client.Scope), scopes)) {
		c := g.Client
		return &c, false, nil
	}
	if md.RegistrationEndpoint == "" {
		if a.cfg.ClientMetadataURL != "" {
			return nil, false, fmt.Errorf("%s supports neither Client ID Metadata Documents nor dynamic registration; pass a pre-registered --oauth-client-id", md.Issuer)
		}
		return nil, false, fmt.Errorf("%s has no dynamic client registration; register a client with it and pass --oauth-client-id (and --oauth-client-secret if it has one)", md.Issuer)
	}
	c, err = a.register(ctx, md, redirect, scopes)
	return c, err == nil, err
}

// errRegistration is matched by a failed dynamic registration.
var errRegistration = errors.New("dynamic client registration")

// register performs RFC 7591 dynamic client registration as a native
// public client where the server allows it, for scopes.
func (a *Authorizer) register(ctx context.Context, md *ServerMetadata, redirect string, scopes []string) (*Client, error) {
	method := AuthNone
	if ms := md.TokenEndpointAuthMethodsSupported; len(ms) > 0 && !slices.Contains(ms, AuthNone) {
		switch {
		case slices.Contains(ms, AuthClientSecretBasic):
			method = AuthClientSecretBasic
		case slices.Contains(ms, AuthClientSecretPost):
			method = AuthClientSecretPost
		}
	}
	meta := map[string]any{
		"client_name":    a.cfg.ClientName,
		"redirect_uris":  []string{redirect},
		"grant_types":    []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"},
		// 2026-07-28 client-registration: "MCP clients MUST specify an
		// appropriate application_type during Dynamic Client
		// Registration"; CLI tools "SHOULD use application_type: native".
		"application_type":           "native",
		"token_endpoint_auth_method": method,
	}
	if a.cfg.Grant == GrantDeviceCode {
		// RFC 8628 §3.4's grant type, and no redirection: RFC 7591 §2 has
		// redirect_uris "for use in redirect-based flows", and
		// response_types ("code" if omitted) for the authorization
		// endpoint, which this client never visits. Servers that check a
		// client's grant against its registration (node-oidc-provider)
		// refuse the device grant to a client registered without it.
		meta["grant_types"] = []string{deviceGrantType, "refresh_token"}
		meta["response_types"] = []string{}
		meta["redirect_uris"] = []string{}
	}
	if len(scopes) > 0 {
		// RFC 7591 §2 scope: the scopes "that the client can use when
		// requesting access tokens". Servers that hold clients to it (Ory
		// Hydra) otherwise give the client their defaults and then refuse
		// the login with invalid_scope.
		meta["scope"] = scopeString(scopes)
	}
	body, _ := json.Marshal(meta)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	status, b, err := a.exchange(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRegistration, err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return nil, fmt.Errorf("%w at %s: %w", errRegistration, md.RegistrationEndpoint, parseErrorResponse("registration", status, b))
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
	c.Scope = scopeString(scopes)
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

// staticTokenHint explains a login that failed at a server that publishes
// no OAuth metadata (the 2025-03-26 default endpoints were all that was
// left) and whose 401 said in words what it wants instead: mcp-bridge
// serve with static tokens says it "takes a static bearer token". That
// sentence helps the person; "registration: HTTP 404" does not, so the
// message carries the server's words only (the registration error stays
// reachable with errors.Unwrap).
func staticTokenHint(err error, d *Discovery, ch Challenge) error {
	desc := ch.Params["error_description"]
	if d == nil || d.Resource != nil || !d.Server.Fallback || desc == "" || !errors.Is(err, errRegistration) {
		return err
	}
	return &hintError{msg: fmt.Sprintf("the server offers no OAuth login (no metadata, no registration endpoint) and its 401 says: %q; pass the token it expects with --bearer-token or -H 'Authorization: Bearer …'", oneLine(desc, 300)), err: err}
}

// A hintError is a message for the person that replaces err's.
type hintError struct {
	msg string
	err error
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }
