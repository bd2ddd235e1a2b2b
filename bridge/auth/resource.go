package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// WellKnown is the RFC 9728 well-known path prefix; the metadata of the
// resource https://host/p/mcp is at https://host/.well-known/oauth-protected-resource/p/mcp.
const WellKnown = "/.well-known/oauth-protected-resource"

// A Resource is one protected endpoint: its canonical URI and the scopes
// every request must have been granted.
type Resource struct {
	s           *Server
	uri         string
	scopes      []string
	metadataURL string
	metadata    []byte
}

// Resource returns the verifier of the endpoint whose canonical URI is
// publicURL (the resource identifier of RFC 8707 §2, which tokens must
// name in aud), requiring scopes.
func (s *Server) Resource(publicURL string, scopes []string) (*Resource, error) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		// authorization (Canonical Server URI): "mcp.example.com (missing
		// scheme)" and "https://mcp.example.com#fragment (contains
		// fragment)" are invalid.
		return nil, fmt.Errorf("auth: public URL %q: want an absolute http(s) URL", publicURL)
	}
	if u.Fragment != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("auth: public URL %q: must have no fragment or query", publicURL)
	}
	for _, sc := range scopes {
		if !validScope(sc) {
			return nil, fmt.Errorf("auth: scope %q: RFC 6749 scope tokens are printable ASCII without space, '\"' or '\\'", sc)
		}
		if sc == "offline_access" {
			// authorization (Refresh Tokens): "MCP Servers (Protected
			// Resources) SHOULD NOT include offline_access in
			// WWW-Authenticate scope or Protected Resource Metadata
			// scopes_supported".
			return nil, errors.New("auth: offline_access is not a resource's scope (the spec says not to require it)")
		}
	}
	// authorization (Canonical Server URI): implementations "SHOULD
	// consistently use the form without the trailing slash".
	uri := strings.TrimSuffix(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	rs := &Resource{s: s, uri: uri, scopes: scopes}
	rs.metadataURL = u.Scheme + "://" + u.Host + WellKnown + strings.TrimSuffix(u.EscapedPath(), "/")
	rs.metadata, err = json.Marshal(protectedResourceMetadata{
		Resource:             uri,
		AuthorizationServers: s.cfg.Issuers,
		ScopesSupported:      scopes,
		BearerMethods:        []string{"header"},
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// URI is the resource's canonical URI; MetadataURL where its RFC 9728
// document is published.
func (rs *Resource) URI() string         { return rs.uri }
func (rs *Resource) MetadataURL() string { return rs.metadataURL }

// validScope: RFC 6749 §3.3 scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Verify checks token for this resource: a JWT against its issuer's keys,
// anything else (or a JWT-looking string go-jose cannot parse) by
// introspection when an endpoint is configured; then the required scopes.
func (rs *Resource) Verify(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	if len(token) > maxTokenSize {
		return nil, ErrMalformed
	}
	var id *Identity
	err := ErrMalformed
	if looksLikeJWT(token) {
		id, err = rs.s.verifyJWT(ctx, token, rs.uri)
	}
	if errors.Is(err, ErrMalformed) && rs.s.intro != nil {
		id, err = rs.s.intro.verify(ctx, token, rs.uri)
	}
	if err != nil {
		return nil, err
	}
	if missing := rs.missingScopes(id.Scopes); len(missing) > 0 {
		return id, ErrInsufficientScope
	}
	return id, nil
}

func (rs *Resource) missingScopes(granted []string) []string {
	var missing []string
next:
	for _, want := range rs.scopes {
		for _, g := range granted {
			if g == want {
				continue next
			}
		}
		missing = append(missing, want)
	}
	return missing
}

// protectedResourceMetadata is the RFC 9728 §2 document.
type protectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
	BearerMethods        []string `json:"bearer_methods_supported"`
}

// ServeMetadata answers the RFC 9728 document. authorization-server-
// discovery: "The Protected Resource Metadata document returned by the
// MCP server MUST include the authorization_servers field containing at
// least one authorization server" (New requires one).
func (rs *Resource) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "max-age=300")
	// A public document: browser-based clients on any origin read it.
	h.Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(rs.metadata)
	}
}

// An Error is a refused request: the HTTP status to answer with and a
// message for the body that holds nothing of the token.
type Error struct {
	Status int
	Err    error // one of the package's sentinel errors
}

func (e *Error) Error() string   { return e.Err.Error() }
func (e *Error) Unwrap() error   { return e.Err }
func (e *Error) HTTPStatus() int { return e.Status }

// Authenticate checks r's bearer token. On success it returns the
// principal (Identity.Principal). On failure it sets WWW-Authenticate on w and
// returns an *Error whose status the caller answers with.
//
// authorization (Token Handling): "Invalid or expired tokens MUST receive
// a HTTP 401 response."; (Error Handling) 403 is for "Invalid scopes or
// insufficient permissions".
func (rs *Resource) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	tok, _ := Bearer(r.Header.Get("Authorization"))
	id, err := rs.Verify(r.Context(), tok)
	if err == nil {
		return id.Principal(), nil
	}
	var sentinel error = ErrMalformed
	for _, s := range []error{ErrNoToken, ErrMalformed, ErrUnknownIssuer, ErrUnknownKey, ErrSignature, ErrAudience, ErrExpired, ErrClaims, ErrInactive, ErrNotAccessToken, ErrInsufficientScope, ErrUnavailable} {
		if errors.Is(err, s) {
			sentinel = s
			break
		}
	}
	rs.s.log.Debug().Err(err).Msg("bearer token refused")
	switch sentinel {
	case ErrNoToken:
		// RFC 6750 §3.1: "If the request lacks any authentication
		// information ..., the resource server SHOULD NOT include an error
		// code or other error information."
		w.Header().Set("WWW-Authenticate", rs.Challenge("", ""))
		return "", &Error{http.StatusUnauthorized, sentinel}
	case ErrInsufficientScope:
		w.Header().Set("WWW-Authenticate", rs.Challenge("insufficient_scope", "the token lacks a scope this server requires"))
		return "", &Error{http.StatusForbidden, sentinel}
	case ErrUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(err)))
		return "", &Error{http.StatusServiceUnavailable, sentinel}
	}
	w.Header().Set("WWW-Authenticate", rs.Challenge("invalid_token", strings.TrimPrefix(sentinel.Error(), "auth: ")))
	return "", &Error{http.StatusUnauthorized, sentinel}
}

// Challenge builds the WWW-Authenticate value: resource_metadata (RFC 9728
// §5.1) and the required scope, and the error when there is one.
// authorization (Scope Selection Strategy): "MCP servers SHOULD include a
// scope parameter in the WWW-Authenticate header"; (Runtime Insufficient
// Scope Errors) the 403 carries error="insufficient_scope", scope and
// resource_metadata.
func (rs *Resource) Challenge(errCode, description string) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="` + rs.metadataURL + `"`)
	if len(rs.scopes) > 0 {
		b.WriteString(`, scope="` + strings.Join(rs.scopes, " ") + `"`)
	}
	if errCode != "" {
		b.WriteString(`, error="` + errCode + `"`)
	}
	if description != "" {
		b.WriteString(`, error_description="` + description + `"`)
	}
	return b.String()
}

// Bearer returns the token of an Authorization header, if it has one
// (RFC 6750 §2.1; the scheme is case-insensitive).
func Bearer(authz string) (string, bool) {
	scheme, tok, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
