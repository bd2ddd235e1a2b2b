package serve

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// guard holds the checks every MCP request passes before it is read: the
// Host and Origin checks here, then the credential (auth.Guard).
type guard struct {
	*auth.Guard
	origins   map[string]bool // normalized scheme://host:port
	checkHost bool
}

func newGuard(cfg *Config) *guard {
	g := &guard{Guard: auth.NewGuard(cfg.tokens(), cfg.NamedTokens, cfg.Auth), checkHost: cfg.CheckHost, origins: map[string]bool{}}
	for _, o := range cfg.AllowedOrigins {
		if n, ok := normalizeOrigin(o); ok {
			g.origins[n] = true
		}
	}
	return g
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
	if g.checkHost && !isLoopbackHost(r.Host) {
		// DNS rebinding: a page on evil.example.com whose name now resolves
		// to 127.0.0.1 reaches a loopback listener with its own Host.
		writeError(w, http.StatusForbidden, nil, wire.CodeInvalidRequest, "Forbidden: Host "+quoteHost(r.Host)+" is not a loopback name", nil)
		return nil, false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		// 2025-11-25 / 2026-07-28 transports: "If the Origin header is
		// present and invalid, servers MUST respond with HTTP 403 Forbidden."
		writeError(w, http.StatusForbidden, nil, wire.CodeInvalidRequest, "Forbidden: Origin not allowed", nil)
		return nil, false
	}
	r, status, msg := g.Admit(w, r)
	if r == nil {
		writeError(w, status, nil, wire.CodeInvalidRequest, msg, nil)
		return nil, false
	}
	return r, true
}

// principal returns whom an admitted request acts for.
func (g *guard) principal(r *http.Request) auth.Principal { return auth.PrincipalOf(r) }

func (g *guard) originAllowed(origin string) bool {
	n, ok := normalizeOrigin(origin)
	if !ok {
		return false
	}
	if g.origins[n] {
		return true
	}
	u, _ := url.Parse(n)
	return isLoopbackName(u.Hostname())
}

// normalizeOrigin lower-cases scheme and host and makes the port explicit.
func normalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port), true
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return isLoopbackName(strings.Trim(host, "[]"))
}

func isLoopbackName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100]
	}
	return "'" + strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, h) + "'"
}

// cors answers preflights and decorates responses for allowed browser
// origins. Browsers need Mcp-Session-Id exposed to keep a legacy session,
// and must be allowed to send the 2026 request headers.
func (g *guard) cors(w http.ResponseWriter, r *http.Request) (preflightDone bool) {
	origin := r.Header.Get("Origin")
	if origin == "" || !g.originAllowed(origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "POST, GET, DELETE, OPTIONS")
	allowed := "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"
	// Mcp-Param-* names depend on each tool's schema: echo them back.
	for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		if name = strings.TrimSpace(name); len(name) > len(wire.HeaderParamPrefix) && strings.EqualFold(name[:len(wire.HeaderParamPrefix)], wire.HeaderParamPrefix) {
			allowed += ", " + name
		}
	}
	h.Set("Access-Control-Allow-Headers", allowed)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}
