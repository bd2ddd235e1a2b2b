package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/aggregate"
)

// openRoute opens an in-process session at one enabled server's route for
// caller c (serve.Handler.Open): what the aggregate sends reaches the
// route's session and child machinery directly, parsed once, and the
// route admits c by its own rules — a static token it accepts, or an
// OAuth principal whose scopes cover the route's own (routeAuth) — so its
// authorization, limits, translation, access log and metrics see the
// caller, with no credential of the gateway's own in between. The
// session's work counts as the route's requests in flight (a retired
// route finishes it before it closes).
func (g *Gateway) openRoute(ctx context.Context, name string, c *caller) (aggregate.Conn, error) {
	g.mu.RLock()
	rt, ok := g.routes[name]
	closed := g.closed()
	g.mu.RUnlock()
	if !ok || closed {
		return nil, errorf("%w: %q", ErrUnknownServer, name)
	}
	conn, err := rt.h.Open(ctx, c.serveCaller(), rt.track)
	if err != nil {
		return nil, errorf("server %s: %w", name, err)
	}
	return conn, nil
}

// track brackets one piece of a route's work that did not come over HTTP
// (openRoute's sessions), as ServeHTTP brackets a request.
func (rt *route) track() func() {
	rt.enter()
	return rt.leave
}

// ErrNoAggregate is returned by AggregateClient when the configuration
// does not turn the aggregated endpoint on (mcpBridge.aggregate).
var ErrNoAggregate = errors.New("gateway: the aggregated endpoint is off")

// AggregateClient returns the URL of the aggregated endpoint and an HTTP
// client whose requests the Gateway serves in-process (handlerTransport):
// a connect.Bridge given both serves every server of the file to a stdio
// host (mcp-bridge connect --config) with no socket, and the host gets
// connect's handling of either era while the aggregate, its reloads,
// late joins and tool filters stay the one implementation serve --config
// runs. The caller closes the client's idle connections when done (a
// no-op, kept for an http.Client's contract).
func (g *Gateway) AggregateClient() (string, *http.Client, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed() {
		return "", nil, errorf("aggregate client after Close")
	}
	if g.agg == nil {
		return "", nil, ErrNoAggregate
	}
	// The host is a loopback name: CheckHost accepts it; the transport
	// ignores it.
	return "http://localhost" + AggregatePath, &http.Client{Transport: &handlerTransport{h: g, life: &g.life}}, nil
}
