package oauth

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Token endpoint client authentication methods (RFC 7591 §2, RFC 7523).
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
)

// Client is the client identity used at one authorization server.
type Client struct {
	ID         string `json:"client_id"`
	Secret     string `json:"client_secret,omitempty"`
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// Source says where the identity came from: "pre-registered",
	// "metadata-document" or "dynamic".
	Source string `json:"source"`
	// RedirectURI is the redirect URI registered with dynamic registration;
	// later logins listen on its port so that it still matches.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Scope is the scope named at dynamic registration; a login that
	// needs more registers again.
	Scope string `json:"scope,omitempty"`
	// SecretExpiresAt is client_secret_expires_at (0: never).
	SecretExpiresAt int64 `json:"client_secret_expires_at,omitempty"`
}

// Token is a token response's content.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
}

// expired reports whether the access token is past its expiry, with a
// margin for clock skew and the request's flight time.
func (t *Token) expired(now time.Time) bool {
	return t.AccessToken == "" || (!t.Expiry.IsZero() && now.Add(30*time.Second).After(t.Expiry))
}

// A TokenError is an error response of the token endpoint (RFC 6749 §5.2)
// or of the registration endpoint (RFC 7591 §3.2.2).
type TokenError struct {
	Endpoint    string // "token" or "registration"
	Status      int
	Code        string // "invalid_grant", ...
	Description string
}

func (e *TokenError) Error() string {
	s := fmt.Sprintf("oauth: %s endpoint: HTTP %d", e.Endpoint, e.Status)
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Description != "" {
		s += ": " + oneLine(e.Description, 200)
	}
	return s
}

// oneLine shortens a server-supplied text for an error message.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// tokenRequest posts form (grant_type and its parameters) to md's token
// endpoint as c, through x/oauth2's client-credentials call: unlike the
// refresh of its TokenSource, it sends extra parameters (grant_type may be
// overridden), and 2026-07-28 §Resource Parameter Implementation has the
// resource "MUST be included in both authorization requests and token
// requests", refreshes included.
func (a *Authorizer) tokenRequest(ctx context.Context, md *ServerMetadata, c *Client, form url.Values) (*Token, error) {
	auth, err := a.clientAuth(md, c)
	if err != nil {
		return nil, err
	}
	maps.Copy(form, auth.params)
	cc := clientcredentials.Config{ClientID: c.ID, ClientSecret: auth.secret, TokenURL: md.TokenEndpoint, AuthStyle: auth.style, EndpointParams: form}
	ot, err := cc.Token(a.oauth2Context(ctx))
	return a.tokenResult(ot, err, c, form.Get("scope"))
}

// exchangeCode redeems an authorization code with its PKCE verifier and
// the resource: x/oauth2's Exchange.
func (a *Authorizer) exchangeCode(ctx context.Context, md *ServerMetadata, c *Client, redirect, code, verifier, resource string) (*Token, error) {
	auth, err := a.clientAuth(md, c)
	if err != nil {
		return nil, err
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	for k := range auth.params {
		opts = append(opts, oauth2.SetAuthURLParam(k, auth.params.Get(k)))
	}
	ot, err := a.oauth2Config(md, c, redirect, auth).Exchange(a.oauth2Context(ctx), code, opts...)
	return a.tokenResult(ot, err, c, "")
}

func (a *Authorizer) oauth2Config(md *ServerMetadata, c *Client, redirect string, auth clientAuth) *oauth2.Config {
	return &oauth2.Config{ClientID: c.ID, ClientSecret: auth.secret, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: auth.style}}
}

// oauth2Context gives x/oauth2 our client under the outbound policy, not
// http.DefaultClient, whose redirects take a secret or a code anywhere.
func (a *Authorizer) oauth2Context(ctx context.Context) context.Context {
	hc := *a.hc()
	hc.Transport = jsonLabel{hc.Transport}
	return context.WithValue(ctx, oauth2.HTTPClient, &hc)
}

// jsonLabel labels a JSON object sent as text/plain (or unlabelled, which
// net/http sniffs as text/plain) application/json: x/oauth2 reads
// text/plain as form-encoded (for GitHub), and would lose such a server's
// token or error code, which RFC 6749 §5.1 and §5.2 define as JSON.
type jsonLabel struct{ rt http.RoundTripper }

func (j jsonLabel) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := cmp.Or(j.rt, http.DefaultTransport).RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/plain" || mt == "" {
		br := bufio.NewReader(resp.Body)
		if b, _ := br.Peek(64); bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			resp.Header.Set("Content-Type", "application/json")
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{br, resp.Body}
	}
	return resp, nil
}

// clientAuth is a client's token endpoint authentication for x/oauth2,
// its style always explicit: auto-detection would retry a refused
// request with the secret placed elsewhere.
type clientAuth struct {
	secret string
	style  oauth2.AuthStyle
	params url.Values // private_key_jwt's client assertion
}

func (a *Authorizer) clientAuth(md *ServerMetadata, c *Client) (clientAuth, error) {
	switch c.AuthMethod {
	case AuthClientSecretBasic:
		// RFC 6749 §2.3.1: x/oauth2 form-encodes the id and secret for Basic.
		return clientAuth{secret: c.Secret, style: oauth2.AuthStyleInHeader}, nil
	case AuthClientSecretPost:
		return clientAuth{secret: c.Secret, style: oauth2.AuthStyleInParams}, nil
	case AuthPrivateKeyJWT:
		if a.cfg.ClientKey == nil {
			return clientAuth{}, errors.New("oauth: private_key_jwt needs --oauth-client-key")
		}
		assertion, err := signAssertion(a.cfg.ClientKey, c.ID, md.Issuer, a.now())
		return clientAuth{style: oauth2.AuthStyleInParams, params: url.Values{
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion":      {assertion},
		}}, err
	}
	return clientAuth{style: oauth2.AuthStyleInParams}, nil // none: client_id alone
}

// tokenResult turns x/oauth2's answer into a Token, and its RetrieveError
// (whose message carries the response body) into a [TokenError], whose
// code callers branch on.
func (a *Authorizer) tokenResult(ot *oauth2.Token, err error, c *Client, scope string) (*Token, error) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return nil, &TokenError{Endpoint: "token", Status: re.Response.StatusCode, Code: oneLine(re.ErrorCode, 64), Description: re.ErrorDescription}
	} else if err != nil {
		return nil, fmt.Errorf("oauth: token request: %w", err)
	}
	t, err := convertToken(ot, a.now())
	if err != nil {
		return nil, err
	}
	a.markKnown(c.ID)
	if len(t.Scopes) == 0 && scope != "" {
		// RFC 6749 §5.1: scope is omitted when identical to the request.
		t.Scopes = strings.Fields(scope)
	}
	return t, nil
}

// convertToken checks a token x/oauth2 decoded; its expiry counts on this
// package's clock.
func convertToken(ot *oauth2.Token, now time.Time) (*Token, error) {
	// OAuth 2.1 §5.1.1: the Bearer scheme; some servers answer "bearer".
	if ot.TokenType != "" && !strings.EqualFold(ot.TokenType, "bearer") {
		return nil, fmt.Errorf("oauth: token response: token_type %q is not Bearer", oneLine(ot.TokenType, 32))
	}
	scope, _ := ot.Extra("scope").(string)
	t := &Token{AccessToken: ot.AccessToken, TokenType: "Bearer", RefreshToken: ot.RefreshToken, Scopes: strings.Fields(scope)}
	if d, ok := seconds(fmt.Sprint(ot.Extra("expires_in"))); ok {
		t.Expiry = now.Add(d)
	}
	return t, nil
}

func parseErrorResponse(endpoint string, status int, b []byte) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &e)
	return &TokenError{Endpoint: endpoint, Status: status, Code: oneLine(e.Error, 64), Description: e.Description}
}
