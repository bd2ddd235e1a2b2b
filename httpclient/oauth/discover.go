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
)

// Discovery is what the client learned about a protected MCP server.
type Discovery struct {
	Resource *ResourceMetadata // nil for a 2025-03-26 server without one
	Server   *ServerMetadata
}

// getJSON fetches a metadata document. found is false for 404 and other
// answers that mean "not here, try the next URL".
func (a *Authorizer) getJSON(ctx context.Context, u string, extra http.Header) (body []byte, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := a.hc().Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, false, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > maxDocument {
		return nil, false, fmt.Errorf("%w: %s: document larger than %d bytes", ErrMetadata, u, maxDocument)
	}
	return b, true, nil
}

// discover finds the protected resource metadata (the challenge's
// resource_metadata, else the well-known URIs) and the authorization
// server metadata.
func (a *Authorizer) discover(ctx context.Context, ch Challenge) (*Discovery, error) {
	endpoint, _ := url.Parse(a.cfg.ServerURL)
	var urls []string
	// 2026-07-28 authorization-server-discovery: clients "MUST ... use the
	// resource metadata URL from the parsed WWW-Authenticate headers when
	// present; otherwise, they MUST fall back to constructing and
	// requesting the well-known URIs in the order listed above."
	if rm := ch.Params["resource_metadata"]; rm != "" && httpURL(rm) {
		urls = []string{rm}
	} else {
		urls = resourceWellKnown(endpoint)
	}
	var prm *ResourceMetadata
	var prmErr error
	var from string // the URL prm came from
	for _, u := range urls {
		b, found, err := a.getJSON(ctx, u, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			prmErr = err
			continue
		}
		if !found {
			continue
		}
		m, err := ParseResourceMetadata(b)
		if err != nil {
			prmErr = err
			continue
		}
		prm, from = m, u
		break
	}
	if prm == nil {
		if prmErr != nil && errors.Is(prmErr, ErrMetadata) {
			return nil, prmErr
		}
		// 2025-03-26 servers have no protected resource metadata: the
		// authorization server is the MCP server's origin.
		sm, err := a.legacyServerMetadata(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		return &Discovery{Server: sm}, nil
	}
	// RFC 9728 §3.3: "The resource value returned MUST be identical to the
	// protected resource's resource identifier value into which the
	// well-known URI path suffix was inserted to create the URL used to
	// retrieve the metadata. If these values are not identical, the data
	// contained in the response MUST NOT be used." and, for a URL from
	// WWW-Authenticate, "the resource value returned MUST be identical to
	// the URL that the client used to make the request to the resource
	// server." A client that went on would hand a token for this server to
	// whichever resource the document names (a parent path is another
	// resource, possibly another tenant's).
	if prm.Resource != "" && !resourceIdentical(prm.Resource, a.cfg.ServerURL, from == rootWellKnown(endpoint)) {
		return nil, fmt.Errorf("%w: the protected resource metadata is for %q, not for %s (RFC 9728 §3.3: they must be identical)", ErrMetadata, oneLine(prm.Resource, 200), a.cfg.ServerURL)
	}
	// RFC 9728 §7.6 leaves the choice among several authorization servers
	// to the client; the first one whose metadata is usable wins.
	var lastErr error
	for _, issuer := range prm.AuthorizationServers {
		sm, err := a.serverMetadata(ctx, issuer)
		if err == nil {
			return &Discovery{Resource: prm, Server: sm}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
	}
	return nil, lastErr
}

// serverMetadata tries the RFC 8414 / OIDC discovery URLs for issuer in
// the spec's order.
func (a *Authorizer) serverMetadata(ctx context.Context, issuer string) (*ServerMetadata, error) {
	urls, err := serverWellKnown(issuer)
	if err != nil {
		return nil, err
	}
	var invalid error
	for _, u := range urls {
		b, found, err := a.getJSON(ctx, u, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			invalid = err
			continue
		}
		if !found {
			continue
		}
		m, err := ParseServerMetadata(b, issuer)
		if err != nil {
			invalid = err
			continue
		}
		return m, nil
	}
	if invalid != nil {
		return nil, invalid
	}
	return nil, fmt.Errorf("%w: no authorization server metadata found for %s", ErrMetadata, issuer)
}

// legacyServerMetadata is the 2025-03-26 discovery: "The authorization base
// URL MUST be determined from the MCP server URL by discarding any existing
// path component", its RFC 8414 metadata is tried first, and "For servers
// that do not implement OAuth 2.0 Authorization Server Metadata, clients
// MUST use the following default endpoint paths relative to the
// authorization base URL": /authorize, /token, /register.
func (a *Authorizer) legacyServerMetadata(ctx context.Context, endpoint *url.URL) (*ServerMetadata, error) {
	base := endpoint.Scheme + "://" + endpoint.Host
	if err := checkSecure("authorization base URL", base); err != nil {
		return nil, err
	}
	b, found, err := a.getJSON(ctx, base+"/.well-known/oauth-authorization-server", nil)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if found {
		// The issuer of a 2025-03-26 server is its origin; some write it
		// with a trailing slash.
		if m, err := ParseServerMetadata(b, base); err == nil {
			return m, nil
		}
		if m, err := ParseServerMetadata(b, base+"/"); err == nil {
			return m, nil
		}
		// 2025-03-26 predates the issuer rule of later revisions, and its
		// servers may state an issuer with a path (http://host/oauth) in
		// the metadata at their origin. The document comes from the MCP
		// server itself, and the issuer is on the same origin (the
		// revision's authorization base URL), so it is used with the
		// issuer it states; another origin is refused.
		var doc struct {
			Issuer string `json:"issuer"`
		}
		if json.Unmarshal(b, &doc) == nil && httpURL(doc.Issuer) && sameOrigin(doc.Issuer, base) {
			if m, err := ParseServerMetadata(b, doc.Issuer); err == nil {
				a.cfg.Logger.Debug().Str("issuer", m.Issuer).Msg("oauth: 2025-03-26 metadata at the server's origin names another issuer; using it")
				return m, nil
			}
		}
	}
	return &ServerMetadata{
		Issuer:                base,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
		Fallback:              true,
	}, nil
}

// hasScope reports whether list contains s.
func hasScope(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unionScopes returns a's scopes followed by those of b not in a.
func unionScopes(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !hasScope(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// scopeString joins scopes for a request.
func scopeString(s []string) string { return strings.Join(s, " ") }

// sameOrigin reports whether a and b have the same scheme and host.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}
