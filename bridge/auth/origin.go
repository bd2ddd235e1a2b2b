package auth

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// Origins is the browser's side of an endpoint's trust boundary, checked
// before any credential (Guard): the Host a request names (DNS
// rebinding), the Origin a browser sends, and the CORS answers for the
// origins allowed. It is read-only once made.
type Origins struct {
	origins   map[string]bool // normalized scheme://host:port
	checkHost bool
}

// NewOrigins accepts the browser origins allowed (loopback origins are
// always accepted) and, with checkHost, only requests whose Host is a
// loopback name: set it when the listener is bound to a loopback address.
func NewOrigins(allowed []string, checkHost bool) *Origins {
	g := &Origins{checkHost: checkHost, origins: map[string]bool{}}
	for _, o := range allowed {
		if n, ok := normalizeOrigin(o); ok {
			g.origins[n] = true
		}
	}
	return g
}

// Check returns 0 when r's Host and Origin may proceed, and otherwise the
// status and the message of the refusal (for the body the caller writes).
// A forged Host or Origin is refused before a token is looked at (call
// Check before Guard.Admit), so a rebinding page learns nothing about the
// token.
func (g *Origins) Check(r *http.Request) (status int, msg string) {
	if g.checkHost && !isLoopbackHost(r.Host) {
		// DNS rebinding: a page on evil.example.com whose name now resolves
		// to 127.0.0.1 reaches a loopback listener with its own Host.
		return http.StatusForbidden, "Forbidden: Host " + quoteHost(r.Host) + " is not a loopback name"
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.Allowed(origin) {
		// 2025-11-25 / 2026-07-28 transports: "If the Origin header is
		// present and invalid, servers MUST respond with HTTP 403 Forbidden."
		return http.StatusForbidden, "Forbidden: Origin not allowed"
	}
	return 0, ""
}

// Allowed reports whether a browser page at origin may call the endpoint:
// one of the allowed origins, or any loopback one.
func (g *Origins) Allowed(origin string) bool {
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

// isLoopbackName is LoopbackHost and what a browser also takes for this
// machine: any case, a trailing dot, and the names under .localhost.
func isLoopbackName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return strings.HasSuffix(host, ".localhost") || outbound.LoopbackHost(host)
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

// CORS answers preflights and decorates responses for allowed browser
// origins. Browsers need Mcp-Session-Id exposed to keep a legacy session,
// and must be allowed to send the 2026 request headers.
func (g *Origins) CORS(w http.ResponseWriter, r *http.Request) (preflightDone bool) {
	origin := r.Header.Get("Origin")
	if origin == "" || !g.Allowed(origin) {
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
