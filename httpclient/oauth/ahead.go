package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// Login logs in ahead of time (mcp-bridge auth login): it asks the server
// for its challenge with an unauthenticated GET (a protected server answers
// every request without a token with 401), then runs a fresh login or
// client-credentials grant, ignoring any stored token, and stores the
// result. It returns the new grant (tokens included: callers must not
// print them).
func (a *Authorizer) Login(ctx context.Context) (*Grant, error) {
	var ch Challenge
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.ServerURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := a.hc().Do(req); err == nil {
		if resp.StatusCode == http.StatusUnauthorized {
			ch, _ = Bearer(resp.Header)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		resp.Body.Close()
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-a.sem }()
	lctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	t0 := time.Now()
	g, _, err := a.renew(lctx, http.StatusUnauthorized, ch, "", true)
	if err != nil {
		if errors.Is(err, ErrLogin) {
			return nil, err
		}
		return nil, &LoginError{Server: a.server, Err: err}
	}
	a.mu.Lock()
	a.grant, a.loaded = g, true
	a.gen++
	a.mu.Unlock()
	a.cfg.Logger.Debug().Str("issuer", g.Issuer).Int64("took_ms", time.Since(t0).Milliseconds()).Msg("oauth: logged in")
	return g, nil
}
