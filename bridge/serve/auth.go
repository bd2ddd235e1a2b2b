package serve

import (
	"net/http"
	"os"
	"os/exec"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The Handler's side of authorization: where the RFC 9728 metadata is
// published, the 404 of a static-token endpoint, the token file's reload,
// and the child's command built without the bridge's credentials. The
// checks themselves are bridge/auth's (guard calls them).

// guard holds the checks every MCP request passes before it is read: the
// Host and Origin checks (auth.Origins), then the credential (auth.Guard).
type guard struct {
	*auth.Guard
	*auth.Origins
}

func newGuard(cfg *Config) *guard {
	return &guard{Guard: auth.NewGuard(cfg.tokens(), cfg.NamedTokens, cfg.Auth), Origins: auth.NewOrigins(cfg.AllowedOrigins, cfg.CheckHost)}
}

// check writes an error response and returns false when r may not
// proceed; otherwise it returns r carrying its Principal. The order
// matters: a forged Host or Origin is refused before a token is looked
// at, so a rebinding page learns nothing about the token.
//
// The token itself goes no further than this check: the child gets the
// body only, never the request's headers, and its environment is scrubbed
// of the bridge's tokens (auth.ScrubEnv). Security considerations: "The MCP
// server MUST NOT pass through the token it received from the MCP
// client."
func (g *guard) check(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	status, msg := g.Origins.Check(r)
	if status == 0 {
		var admitted *http.Request
		if admitted, status, msg = g.Admit(w, r); admitted != nil {
			return admitted, true
		}
	}
	writeError(w, status, nil, wire.CodeInvalidRequest, msg, nil)
	return nil, false
}

// principal returns whom an admitted request acts for.
func (g *guard) principal(r *http.Request) auth.Principal { return auth.PrincipalOf(r) }

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
	return path == auth.WellKnown+h.cfg.path() || (h.cfg.path() == "/mcp" && path == auth.WellKnown)
}

// notFound answers a path the Handler does not serve; an endpoint with
// static tokens only says on the OAuth login paths that a token is wanted
// (auth.Guard.ServeNoLogin).
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	if !h.guard.ServeNoLogin(w, r) {
		http.NotFound(w, r)
	}
}

// SetTokens replaces the Config.NamedTokens (a re-read --auth-token-file);
// Config.AuthToken(s) stay. Requests already admitted go on. Children
// started from now on have both the new tokens and the first ones
// scrubbed from their environment (command).
func (h *Handler) SetTokens(named []auth.NamedToken) {
	h.guard.SetTokens(named)
}

// TokenCount is how many bearer tokens the configuration accepts: the
// --auth-token ones and every entry of a token file (NamedTokens), which
// is what a startup line reporting the tokens must count.
func (c *Config) TokenCount() int { return len(c.allTokens()) }

// command returns a fresh child command whose environment holds no
// credential of the bridge's. It is the one place every child (shared,
// per session, per principal, probe sibling) is built, so the scrub cannot
// be missed by a new kind of child.
func (h *Handler) command() *exec.Cmd {
	cmd := h.cfg.Command()
	env := cmd.Env
	if env == nil {
		env = os.Environ() // what exec would otherwise inherit
	}
	cmd.Env = auth.ScrubEnv(env, append(h.cfg.allTokens(), h.guard.Tokens()...))
	return cmd
}

// checkChildArgs refuses a child command line that carries an inbound
// token (auth.ErrTokenInChild).
func checkChildArgs(cfg *Config) error {
	tokens := cfg.allTokens()
	if len(tokens) == 0 || cfg.Command == nil {
		return nil
	}
	return auth.CheckArgs(cfg.Command().Args, tokens)
}
