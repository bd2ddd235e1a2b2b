package gateway

import (
	"io"
	"net/http"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The aggregate's HTTP+SSE transport: next to AggregatePath, as serve
// places it.
const aggregateSSE, aggregateMessage = "/sse", "/message"

// metadataPrefix is where RFC 9728 protected-resource metadata lives; a
// server's own is at metadataPrefix + its path.
const metadataPrefix = "/.well-known/oauth-protected-resource"

// ServeHTTP routes /servers/<name>/mcp (and the server's RFC 9728
// metadata path, and its HTTP+SSE paths /servers/<name>/sse and
// /servers/<name>/message) to the server's Handler, /servers/<name>/readyz to its
// readiness, and answers /healthz and /readyz for the whole gateway.
// Anything else, an unknown server's or a disabled one's path included, is
// a 404 with a JSON-RPC error body.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch p {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	case "/readyz":
		g.serveReady(w)
		return
	case AggregatePath, aggregateSSE, aggregateMessage, metadataPrefix, metadataPrefix + AggregatePath:
		g.mu.RLock()
		agg := g.agg
		g.mu.RUnlock()
		if agg == nil {
			notFound(w, "the aggregated endpoint is off (mcpBridge.aggregate); servers are at /servers/<name>/mcp")
			return
		}
		agg.ServeHTTP(w, r)
		return
	}
	name, rest, ok := serverPath(strings.TrimPrefix(p, metadataPrefix))
	if !ok {
		notFound(w, "no MCP endpoint at this path; servers are at /servers/<name>/mcp")
		return
	}
	if rest == "readyz" && !strings.HasPrefix(p, metadataPrefix) && g.authOn() && g.identify(r) == nil {
		// A server's readiness tells whether the name exists: with
		// inbound auth on, it is told only to a caller the gateway
		// accepts, and every other caller gets the same 401 whatever the
		// name (a load balancer probes the gateway's /readyz).
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-bridge"`)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "a server's readiness needs a token the gateway accepts; /readyz is the gateway's own\n")
		return
	}
	g.mu.RLock()
	rt := g.routes[name]
	disabled := rt == nil && g.file.Servers[name] != nil
	decoy := g.decoy()
	g.mu.RUnlock()
	if rt == nil && rest == "mcp" && !strings.HasPrefix(p, metadataPrefix) && decoy != nil && g.identify(r) == nil {
		// Static tokens only: a caller without one gets the 401 that an
		// enabled server's route gives it (its own guard refuses it), so
		// that /servers/<name>/mcp does not tell which names exist. (With
		// OAuth each endpoint's RFC 9728 metadata names it, by design.)
		r2 := r.Clone(r.Context())
		r2.URL.Path = Path(decoy.name)
		decoy.h.ServeHTTP(w, r2)
		return
	}
	switch {
	case disabled:
		notFound(w, "MCP server "+name+" is disabled")
		return
	case rt == nil:
		notFound(w, "no MCP server named "+name)
		return
	case rest == "readyz" && !strings.HasPrefix(p, metadataPrefix):
		// The server's own readiness, which the gateway's /readyz does not
		// include (see serveReady).
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/readyz"
		rt.h.ServeHTTP(w, r2)
		return
	case rest != "mcp" && rest != "sse" && rest != "message":
		// sse and message: the server's HTTP+SSE transport (serve's
		// sse.go), whose Handler answers 404 itself when it is off.
		notFound(w, "no MCP endpoint at this path; servers are at /servers/<name>/mcp")
		return
	}
	rt.enter()
	defer rt.leave()
	rt.h.ServeHTTP(w, r)
}

// serverPath splits "/servers/<name>/<rest>".
func serverPath(p string) (name, rest string, ok bool) {
	p, ok = strings.CutPrefix(p, "/servers/")
	if !ok {
		return "", "", false
	}
	name, rest, ok = strings.Cut(p, "/")
	return name, rest, ok && name != ""
}

// serveReady answers the gateway's /readyz: 503 once draining, 200
// otherwise. It deliberately does not wait for every server: a server that
// cannot start must cost only its own route, not take the replica (and
// its healthy routes) out of a load balancer. Each server's readiness is
// at /servers/<name>/readyz.
func (g *Gateway) serveReady(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if g.isDraining() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "draining\n")
		return
	}
	io.WriteString(w, "ready\n")
}

func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, msg, nil))
}

// decoy is a route whose guard answers a caller without an accepted
// static token, for names that are not routes; nil unless inbound auth is
// static tokens only. g.mu is held.
func (g *Gateway) decoy() *route {
	if !g.authOn() || g.cfg.Auth != nil || g.cfg.Base.Auth != nil {
		return nil
	}
	for _, name := range sortedRoutes(g.routes) {
		return g.routes[name]
	}
	return nil
}
