package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// ResourceMetadata is an OAuth 2.0 Protected Resource Metadata document
// (RFC 9728 §2), the fields a client uses.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
}

// ServerMetadata is OAuth 2.0 Authorization Server Metadata (RFC 8414 §2)
// or an OpenID Provider configuration, the fields a client uses.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocation_endpoint,omitempty"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint,omitempty"` // RFC 8628 §4
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported            []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported               []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgs      []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported,omitempty"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported,omitempty"`

	// Fallback is true for the 2025-03-26 default endpoints, used when the
	// server publishes no metadata at all.
	Fallback bool `json:"-"`
}

// ErrMetadata is matched by every error about a malformed or unusable
// metadata document.
var ErrMetadata = errors.New("oauth: invalid metadata")

// maxDocument bounds every JSON document read from a server.
const maxDocument = 1 << 20

// ParseResourceMetadata decodes and checks a protected resource metadata
// document.
func ParseResourceMetadata(b []byte) (*ResourceMetadata, error) {
	var m ResourceMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: protected resource metadata: %v", ErrMetadata, err)
	}
	// 2026-07-28 authorization-server-discovery: "The Protected Resource
	// Metadata document returned by the MCP server MUST include the
	// authorization_servers field containing at least one authorization
	// server."
	servers := m.AuthorizationServers[:0:0]
	for _, s := range m.AuthorizationServers {
		if httpURL(s) {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: protected resource metadata names no usable authorization server", ErrMetadata)
	}
	m.AuthorizationServers = servers
	if m.Resource != "" && !httpURL(m.Resource) {
		return nil, fmt.Errorf("%w: protected resource metadata: resource %q is not an http(s) URL", ErrMetadata, m.Resource)
	}
	return &m, nil
}

// ParseServerMetadata decodes authorization server metadata fetched for
// issuer and checks it.
func ParseServerMetadata(b []byte, issuer string) (*ServerMetadata, error) {
	var m ServerMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: authorization server metadata: %v", ErrMetadata, err)
	}
	// 2026-07-28 authorization-server-discovery: "the issuer value in the
	// document MUST be identical to the issuer identifier used to construct
	// the well-known URL. If they differ, the client MUST NOT use the
	// metadata."
	if m.Issuer != issuer {
		return nil, fmt.Errorf("%w: authorization server metadata for %q names issuer %q", ErrMetadata, issuer, m.Issuer)
	}
	if !httpURL(m.AuthorizationEndpoint) && m.AuthorizationEndpoint != "" {
		return nil, fmt.Errorf("%w: authorization_endpoint %q is not an http(s) URL", ErrMetadata, m.AuthorizationEndpoint)
	}
	if !httpURL(m.TokenEndpoint) {
		return nil, fmt.Errorf("%w: token_endpoint %q is not an http(s) URL", ErrMetadata, m.TokenEndpoint)
	}
	if m.RegistrationEndpoint != "" && !httpURL(m.RegistrationEndpoint) {
		m.RegistrationEndpoint = "" // unusable: as if absent
	}
	if m.DeviceAuthorizationEndpoint != "" && !httpURL(m.DeviceAuthorizationEndpoint) {
		m.DeviceAuthorizationEndpoint = "" // unusable: as if absent
	}
	for _, e := range []struct{ name, url string }{
		{"issuer", m.Issuer},
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
		{"device_authorization_endpoint", m.DeviceAuthorizationEndpoint},
	} {
		if err := checkSecure(e.name, e.url); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// ErrInsecure is matched when an authorization server endpoint is plain
// http on a host other than this machine's loopback.
var ErrInsecure = errors.New("oauth: authorization server endpoint is not https")

// checkSecure applies 2026-07-28 authorization security-considerations:
// "All authorization server endpoints MUST be served over HTTPS." A
// loopback host is allowed plain http: nothing crosses a network, and
// local development and tests run that way. Callers check before they
// send anything to the endpoint, so no registration, code or PKCE
// verifier ever goes out in clear. "" (an absent endpoint) passes.
func checkSecure(name, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %s %q: %v", ErrMetadata, name, raw, err)
	}
	if strings.EqualFold(u.Scheme, "https") || (strings.EqualFold(u.Scheme, "http") && outbound.LoopbackHost(u.Hostname())) {
		return nil
	}
	return fmt.Errorf("%w: %s %s is neither https nor on a loopback host; refusing to send a registration, code or token request there", ErrInsecure, name, raw)
}

// SupportsPKCE applies 2025-11-25 authorization §Authorization Code
// Protection: "If code_challenge_methods_supported is absent, the
// authorization server does not support PKCE and MCP clients MUST refuse to
// proceed." The 2025-03-26 fallback endpoints have no metadata to consult;
// PKCE is sent to them regardless.
func (m *ServerMetadata) SupportsPKCE() bool {
	return m.Fallback || slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Fragment == ""
}

// resourceWellKnown lists the RFC 9728 §3.1 metadata URLs for the MCP
// endpoint, path-aware first, then the root (2026-07-28
// authorization-server-discovery: clients "MUST fall back to constructing
// and requesting the well-known URIs in the order listed above").
func resourceWellKnown(endpoint *url.URL) []string {
	base := url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}
	path := strings.TrimSuffix(endpoint.EscapedPath(), "/")
	var out []string
	if path != "" {
		out = append(out, base.String()+"/.well-known/oauth-protected-resource"+path)
	}
	return append(out, base.String()+"/.well-known/oauth-protected-resource")
}

// serverWellKnown lists the metadata URLs for issuer in the order of
// 2026-07-28 authorization-server-discovery ("clients MUST try endpoints in
// the following priority order").
func serverWellKnown(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || !httpURL(issuer) {
		return nil, fmt.Errorf("%w: issuer %q is not an http(s) URL", ErrMetadata, issuer)
	}
	if err := checkSecure("issuer", issuer); err != nil {
		return nil, err // before its metadata is fetched
	}
	base := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{
			base + "/.well-known/oauth-authorization-server",
			base + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}, nil
}

// CanonicalResource returns the RFC 8707 resource identifier of an MCP
// endpoint (2026-07-28 authorization §Canonical Server URI): lower-case
// scheme and host, no fragment, no query, no trailing slash.
func CanonicalResource(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("oauth: %q is not an http(s) URL", endpoint)
	}
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return strings.TrimSuffix(c.String(), "/"), nil
}

// rootWellKnown is the RFC 9728 metadata URL at endpoint's origin, the
// one whose resource identifier is the origin itself.
func rootWellKnown(endpoint *url.URL) string {
	return (&url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}).String() + "/.well-known/oauth-protected-resource"
}

// resourceIdentical reports whether the protected resource metadata's
// resource is the MCP endpoint, or with root (the document came from the
// origin's well-known URL) the origin. Both sides are compared in their
// canonical form (scheme and host case, a trailing slash), which names the
// same resource; a parent path, another host or scheme does not.
func resourceIdentical(resource, endpoint string, root bool) bool {
	r, err1 := CanonicalResource(resource)
	e, err2 := CanonicalResource(endpoint)
	if err1 != nil || err2 != nil {
		return false
	}
	if r == e {
		return true
	}
	u, _ := url.Parse(e)
	return root && r == u.Scheme+"://"+u.Host
}
