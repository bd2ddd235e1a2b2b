package oauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// Transport is an http.RoundTripper that sends the Authorizer's bearer
// token with every request to the server's origin and answers the
// server's 401 (and 403 insufficient_scope) by getting a new token and
// sending the request once more. A 401 or 403 means the server did not
// process the request, so that second send cannot run anything twice. A
// request whose body cannot be replayed (no GetBody) gets the 401/403
// response back as is.
//
// net/http runs the Transport again for each hop of a redirect, so a
// round tripper that adds a token would add it to the redirect target
// too. The http.Client above this one follows the outbound policy (no
// hop to another origin); on top of that, a request to any origin but the
// MCP server's is refused here with [ErrOtherOrigin] before a token is
// attached: the token is for that server alone.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Auth supplies the tokens. Required.
	Auth *Authorizer
}

// ErrOtherOrigin reports a request through [Transport] to another origin
// than the MCP server the Authorizer's tokens are for.
var ErrOtherOrigin = errors.New("oauth: the access token is not sent to another origin than the MCP server's")

// drainLimit bounds how much of a 401/403 body is read before the
// connection is dropped rather than reused.
const drainLimit = 64 << 10

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	// The token is bound to the MCP server (RFC 8707 resource; 2026-07-28
	// security considerations §Token Audience Binding and Validation): no
	// other origin gets it, whatever a redirect says.
	if !outbound.SameOrigin(req.URL, t.Auth.serverURL) {
		closeBody(req)
		return nil, fmt.Errorf("%w: %s", ErrOtherOrigin, outbound.Redact(req.URL))
	}
	// 2026-07-28 §Step-Up Authorization Flow: "Retry the original request
	// with the new authorization no more than a few times and treat this as
	// a permanent authorization failure".
	unauthorized, stepUps := 1, max(0, t.Auth.cfg.MaxStepUps)
	for attempt := 0; ; attempt++ {
		tok, gen, err := t.Auth.Token(ctx)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		r := req.Clone(ctx)
		if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		// 2026-07-28 §Token Requirements: "authorization MUST be included in
		// every HTTP request from client to server" (once there is a token).
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			if unauthorized == 0 {
				return resp, nil
			}
			unauthorized--
		case http.StatusForbidden:
			if stepUps == 0 {
				return resp, nil
			}
			stepUps--
		default:
			t.Auth.accept(gen)
			return resp, nil
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, nil // cannot send it again
		}
		herr := t.Auth.Handle(ctx, gen, resp.StatusCode, resp.Header)
		if errors.Is(herr, ErrNotOurs) {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		_ = resp.Body.Close()
		if herr != nil {
			return nil, herr
		}
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
