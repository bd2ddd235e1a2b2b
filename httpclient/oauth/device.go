package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/oauth2"
)

// deviceGrantType is the grant_type of RFC 8628 §3.4.
const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

const (
	// defaultDeviceInterval is RFC 8628 §3.2's interval "If no value is
	// provided": "clients MUST use 5 as the default".
	defaultDeviceInterval = 5 * time.Second
	// slowDownStep is RFC 8628 §3.5's slow_down increase.
	slowDownStep = 5 * time.Second
	// maxUserCode bounds the user code printed for a person: RFC 8628
	// §6.1 has it short enough to type.
	maxUserCode = 64
)

// ErrDeviceExpired is matched when the device code expired (the server's
// expired_token, or its expires_in passed) before anyone approved it, also
// after the one new device authorization that follows a first expiry.
var ErrDeviceExpired = errors.New("oauth: the device code expired before the authorization was approved")

// ErrDeviceDenied is matched when the person refused the device
// authorization (RFC 8628 §3.5 access_denied).
var ErrDeviceDenied = errors.New("oauth: the device authorization was denied")

// DeviceAuthorization is a device authorization response (RFC 8628 §3.2).
// DeviceCode is a credential of this client: it is sent to the token
// endpoint only, never printed or logged.
type DeviceAuthorization struct {
	DeviceCode              string
	UserCode                string
	VerificationURI         *url.URL
	VerificationURIComplete *url.URL // nil when the server gave none
	ExpiresIn               time.Duration
	Interval                time.Duration
}

// ParseDeviceAuthorization decodes and checks a device authorization
// response. What is shown to a person must be safe to print on a
// terminal: URLs must parse as http(s) (url.Parse refuses control
// characters), the user code must be short and printable.
func ParseDeviceAuthorization(b []byte) (*DeviceAuthorization, error) {
	var r struct {
		DeviceCode              string          `json:"device_code"`
		UserCode                string          `json:"user_code"`
		VerificationURI         string          `json:"verification_uri"`
		VerificationURIComplete string          `json:"verification_uri_complete"`
		ExpiresIn               json.RawMessage `json:"expires_in"`
		Interval                json.RawMessage `json:"interval"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: device authorization response: %v", ErrMetadata, err)
	}
	if r.DeviceCode == "" || r.UserCode == "" || r.VerificationURI == "" {
		return nil, fmt.Errorf("%w: device authorization response lacks device_code, user_code or verification_uri (RFC 8628 §3.2)", ErrMetadata)
	}
	if len(r.UserCode) > maxUserCode || strings.IndexFunc(r.UserCode, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return nil, fmt.Errorf("%w: device authorization response: the user_code is not a short printable code", ErrMetadata)
	}
	d := &DeviceAuthorization{DeviceCode: r.DeviceCode, UserCode: r.UserCode, Interval: defaultDeviceInterval}
	var err error
	if d.VerificationURI, err = url.Parse(r.VerificationURI); err != nil || !httpURL(r.VerificationURI) {
		return nil, fmt.Errorf("%w: device authorization response: verification_uri is not an http(s) URL", ErrMetadata)
	}
	if r.VerificationURIComplete != "" && httpURL(r.VerificationURIComplete) {
		d.VerificationURIComplete, _ = url.Parse(r.VerificationURIComplete)
	}
	var ok bool
	if d.ExpiresIn, ok = seconds(string(r.ExpiresIn)); !ok {
		return nil, fmt.Errorf("%w: device authorization response lacks a positive expires_in (RFC 8628 §3.2)", ErrMetadata)
	}
	if iv, ok := seconds(string(r.Interval)); ok {
		d.Interval = iv
	}
	return d, nil
}

// seconds reads a positive number of seconds, given as a JSON number or,
// from some servers, a numeric string.
func seconds(raw string) (time.Duration, bool) {
	n, err := strconv.ParseFloat(strings.Trim(raw, `"`), 64)
	if err != nil || n <= 0 || n >= 1e10 {
		return 0, false
	}
	return time.Duration(n * float64(time.Second)), true
}

// deviceCode runs the device authorization grant (RFC 8628): client
// identity (a registration names the device grant), the device
// authorization request, the verification URI and user code for the
// person, and polling of the token endpoint. An expired device code gets
// one new device authorization, not more: nobody may be there.
func (a *Authorizer) deviceCode(ctx context.Context, md *ServerMetadata, rec *Record, g *Grant, scopes []string, resource string, known bool) (*Token, error) {
	if md.DeviceAuthorizationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %s advertises no device_authorization_endpoint (RFC 8628 §4): it does not offer the device grant; use --oauth-grant authorization_code", md.Issuer)
	}
	c, err := a.identity(ctx, md, rec, g, "", scopes, known)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.requested = scopes
	a.mu.Unlock()
	t, err := a.deviceAttempt(ctx, md, c, scopes, resource)
	if errors.Is(err, ErrDeviceExpired) {
		a.cfg.Logger.Info().Str("issuer", md.Issuer).Msg("oauth: the device code expired unapproved; asking for a new one, once")
		if t, err = a.deviceAttempt(ctx, md, c, scopes, resource); errors.Is(err, ErrDeviceExpired) {
			err = fmt.Errorf("%w, twice; not asking for a third code (run mcp-bridge auth login --oauth-grant device_code when someone can approve it)", err)
		}
	}
	return t, err
}

// deviceAttempt is one device authorization request and its polling.
func (a *Authorizer) deviceAttempt(ctx context.Context, md *ServerMetadata, c *Client, scopes []string, resource string) (*Token, error) {
	form := url.Values{}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	if resource != "" {
		// 2026-07-28 §Resource Parameter Implementation: the resource
		// parameter "MUST be included in both authorization requests and
		// token requests"; the device authorization request is this
		// grant's authorization request.
		form.Set("resource", resource)
	}
	// x/oauth2's DeviceAuth sends client_id alone; RFC 8628 §3.1 has
	// confidential clients authenticate here as at the token endpoint.
	auth, err := a.clientAuth(md, c)
	if err != nil {
		return nil, err
	}
	maps.Copy(form, auth.params)
	if auth.style == oauth2.AuthStyleInParams {
		form.Set("client_id", c.ID)
		if auth.secret != "" {
			form.Set("client_secret", auth.secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.DeviceAuthorizationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if auth.style == oauth2.AuthStyleInHeader {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(auth.secret))
	}
	status, b, err := a.exchange(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: device authorization request: %w", err)
	}
	if status != http.StatusOK {
		return nil, parseErrorResponse("device_authorization", status, b)
	}
	d, err := ParseDeviceAuthorization(b)
	if err != nil {
		return nil, err
	}
	deadline := a.now().Add(d.ExpiresIn)
	a.showDevice(d)
	a.cfg.Logger.Info().Str("issuer", md.Issuer).Str("verification_uri", d.VerificationURI.String()).
		Int64("expires_in_ms", d.ExpiresIn.Milliseconds()).Int64("interval_ms", d.Interval.Milliseconds()).Strs("scopes", scopes).
		Msg("oauth: device authorization started; waiting for the person to approve it")

	interval := d.Interval
	for {
		if err := a.sleep(ctx, interval); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("no approval of the device code within %s (--oauth-timeout): %w", a.cfg.Timeout, err)
			}
			return nil, err
		}
		if !a.now().Before(deadline) {
			return nil, fmt.Errorf("%w (its expires_in of %s passed)", ErrDeviceExpired, d.ExpiresIn)
		}
		poll := url.Values{"grant_type": {deviceGrantType}, "device_code": {d.DeviceCode}}
		if resource != "" {
			poll.Set("resource", resource)
		}
		t, err := a.tokenRequest(ctx, md, c, poll)
		if err == nil {
			if len(t.Scopes) == 0 {
				t.Scopes = scopes // RFC 6749 §5.1: omitted when as requested
			}
			a.cfg.Logger.Info().Str("issuer", md.Issuer).Msg("oauth: the device authorization was approved")
			return t, nil
		}
		var te *TokenError
		var ne net.Error
		switch {
		case errors.As(err, &te) && te.Code == "authorization_pending":
			// RFC 8628 §3.5: "The client SHOULD repeat the access token
			// request to the token endpoint".
		case errors.As(err, &te) && te.Code == "slow_down":
			// RFC 8628 §3.5: "the interval MUST be increased by 5 seconds
			// for this and all subsequent requests."
			interval += slowDownStep
			a.cfg.Logger.Debug().Int64("interval_ms", interval.Milliseconds()).Msg("oauth: slow_down: polling less often")
		case errors.As(err, &te) && te.Code == "access_denied":
			return nil, fmt.Errorf("%w at %s: %w", ErrDeviceDenied, md.Issuer, err)
		case errors.As(err, &te) && te.Code == "expired_token":
			return nil, fmt.Errorf("%w: %w", ErrDeviceExpired, err)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &ne) && ne.Timeout(), errors.As(err, &te) && te.Status >= 500:
			// RFC 8628 §3.5: "On encountering a connection timeout, clients
			// MUST unilaterally reduce their polling frequency before
			// retrying." Doubling is its recommended way; a 5xx is met
			// the same way rather than ending a login someone may be
			// approving right now.
			interval *= 2
			a.cfg.Logger.Warn().Err(err).Int64("interval_ms", interval.Milliseconds()).Msg("oauth: device grant poll failed; polling less often")
		default:
			return nil, err
		}
	}
}

// showDevice tells the person where to approve the login. The device
// code stays out of it: whoever holds it gets the token once approved.
func (a *Authorizer) showDevice(d *DeviceAuthorization) {
	a.noticeDevice(d)
	if a.cfg.Prompt == nil {
		return
	}
	var s strings.Builder
	fmt.Fprintf(&s, "mcp-bridge: to authorize access to %s, open this URL on any device with a browser:\n\n    %s\n\nand enter the code: %s\n", a.server, d.VerificationURI, d.UserCode)
	if d.VerificationURIComplete != nil {
		fmt.Fprintf(&s, "\n(or open this URL, which carries the code:\n\n    %s\n)\n", d.VerificationURIComplete)
	}
	fmt.Fprintf(&s, "\nThe code expires in %s; waiting up to %s.\n\n", d.ExpiresIn.Round(time.Second), a.cfg.Timeout)
	_, _ = fmt.Fprint(a.cfg.Prompt, s.String())
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
