package serve

import (
	"net/http"
	"strings"
)

// An Authenticator admits requests by a credential other than the static
// tokens: bridge/auth's Resource (OAuth access tokens) is one. It is an
// interface so that serve does not depend on a JOSE library.
type Authenticator interface {
	// Authenticate returns the principal r acts for (a stable identity:
	// bridge/auth gives "<issuer> <subject>", or "client:<issuer> <client_id>" for an
	// introspected client-credentials token). On failure it has set the
	// challenge headers on w, and the error says why without quoting the
	// token; its HTTPStatus() int method, if it has one, gives the status
	// (else 401). The Handler writes the body.
	Authenticate(w http.ResponseWriter, r *http.Request) (principal string, err error)

	// ServeMetadata answers the RFC 9728 protected-resource metadata.
	ServeMetadata(w http.ResponseWriter, r *http.Request)
}

// wellKnownResource is RFC 9728's well-known prefix: the metadata of
// https://host/p/mcp is at /.well-known/oauth-protected-resource/p/mcp.
const wellKnownResource = "/.well-known/oauth-protected-resource"

// isMetadataPath reports whether path is where the Handler publishes its
// resource metadata: after the well-known prefix (RFC 9728 §3.1), and for
// /mcp also the root form clients fall back to (authorization-server-
// discovery: "At the root: https://example.com/.well-known/oauth-protected-resource").
// Without an Authenticator nothing is published there: a host that finds
// no metadata is not sent to an authorization server that does not exist.
func (h *Handler) isMetadataPath(path string) bool {
	if h.cfg.Auth == nil {
		return false
	}
	return path == wellKnownResource+h.cfg.path() || (h.cfg.path() == "/mcp" && path == wellKnownResource)
}

// oauthPaths are where a client looks for an OAuth login after a 401:
// the RFC 9728 and RFC 8414/OIDC well-known documents and, for a
// 2025-03-26-era client that found none, the default endpoints at the
// origin.
var oauthPaths = []string{"/.well-known/", "/register", "/authorize", "/token"}

// notFound answers a path the Handler does not serve. A host given no
// token that gets a 401 from a static-token endpoint goes looking for an
// OAuth login and shows the user the last answer (Claude Code 2.1:
// "Dynamic Client Registration rejected (HTTP 404): 404 page not found");
// on those paths the 404 says what is wanted instead.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Auth == nil && len(h.guard.tokens.Load().hashes) > 0 {
		for _, p := range oauthPaths {
			if strings.HasPrefix(r.URL.Path, p) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte("mcp-bridge: this server has no OAuth login; it takes a static bearer token: configure the header \"Authorization: Bearer <token>\" (ask the server's operator for a token)\n"))
				return
			}
		}
	}
	http.NotFound(w, r)
}

// A NamedToken is an accepted bearer token and the name its holder goes by
// in logs and metrics (empty: a prefix of the token's hash).
type NamedToken struct {
	Name  string
	Token string
}

// SetTokens replaces the Config.NamedTokens (a re-read --auth-token-file);
// Config.AuthToken(s) stay. Requests already admitted go on. Children
// started from now on have both the new tokens and the first ones
// scrubbed from their environment (secrets.go).
func (h *Handler) SetTokens(named []NamedToken) {
	h.guard.setTokens(named)
}

// TokenCount is how many bearer tokens the configuration accepts: the
// --auth-token ones and every entry of a token file (NamedTokens), which
// is what a startup line reporting the tokens must count.
func (c *Config) TokenCount() int { return len(c.allTokens()) }
