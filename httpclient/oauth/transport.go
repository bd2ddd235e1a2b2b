package oauth

import (
	"errors"
	"io"
	"net/http"
)

// Transport is an http.RoundTripper that sends the Authorizer's bearer
// token with every request and answers the server's 401 (and 403
// insufficient_scope) by getting a new token and sending the request once
// more. A 401 or 403 means the server did not process the request, so
// that second send cannot run anything twice. A request whose body cannot
// be replayed (no GetBody) gets the 401/403 response back as is.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Auth supplies the tokens. Required.
	Auth *Authorizer
}

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
