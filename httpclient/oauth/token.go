package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
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

// tokenRequest posts form to the token endpoint with the client's
// authentication and decodes the token response.
func (a *Authorizer) tokenRequest(ctx context.Context, md *ServerMetadata, c *Client, form url.Values, prev *Token) (*Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.TokenEndpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("oauth: token request: %w", err)
	}
	if err := a.authenticate(req, form, md, c); err != nil {
		return nil, err
	}
	status, b, err := a.exchange(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: token request: %w", err)
	}
	if status != http.StatusOK {
		return nil, parseErrorResponse("token", status, b)
	}
	t, err := ParseTokenResponse(b, a.now())
	if err != nil {
		return nil, err
	}
	a.markKnown(c.ID)
	if t.RefreshToken == "" && prev != nil {
		// RFC 6749 §6: on refresh the server MAY issue a new refresh token;
		// when it does not, the old one stays valid.
		t.RefreshToken = prev.RefreshToken
	}
	if len(t.Scopes) == 0 && form.Get("scope") != "" {
		// RFC 6749 §5.1: scope is omitted when identical to the request.
		t.Scopes = strings.Fields(form.Get("scope"))
	}
	return t, nil
}

// authenticate adds c's client authentication to req and form, and sets
// form as req's body: the token endpoint and the device authorization
// endpoint (RFC 8628 §3.1) take the same.
func (a *Authorizer) authenticate(req *http.Request, form url.Values, md *ServerMetadata, c *Client) error {
	switch c.AuthMethod {
	case AuthClientSecretBasic:
		// RFC 6749 §2.3.1: the client id and secret are form-encoded before
		// they are joined for Basic.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	case AuthClientSecretPost:
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	case AuthPrivateKeyJWT:
		if a.cfg.ClientKey == nil {
			return errors.New("oauth: private_key_jwt needs --oauth-client-key")
		}
		assertion, err := signAssertion(a.cfg.ClientKey, c.ID, md.Issuer, a.now())
		if err != nil {
			return err
		}
		form.Set("client_id", c.ID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	default:
		form.Set("client_id", c.ID)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return nil
}

func parseErrorResponse(endpoint string, status int, b []byte) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &e)
	return &TokenError{Endpoint: endpoint, Status: status, Code: oneLine(e.Error, 64), Description: e.Description}
}

// ParseTokenResponse decodes a successful token response (RFC 6749 §5.1).
// expires_in may be a number or, from some servers, a numeric string.
func ParseTokenResponse(b []byte, now time.Time) (*Token, error) {
	var r struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		Scope        string          `json:"scope"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("oauth: token response: %w", err)
	}
	if r.AccessToken == "" {
		return nil, errors.New("oauth: token response has no access_token")
	}
	// OAuth 2.1 §5.1.1: the Bearer scheme; some servers answer "bearer".
	if r.TokenType != "" && !strings.EqualFold(r.TokenType, "bearer") {
		return nil, fmt.Errorf("oauth: token response: token_type %q is not Bearer", oneLine(r.TokenType, 32))
	}
	t := &Token{AccessToken: r.AccessToken, TokenType: "Bearer", RefreshToken: r.RefreshToken, Scopes: strings.Fields(r.Scope)}
	if d, ok := seconds(r.ExpiresIn); ok {
		t.Expiry = now.Add(d)
	}
	return t, nil
}
