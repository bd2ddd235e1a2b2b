package gateway

import (
	"context"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// AggregatePath is the aggregated endpoint (mcpBridge.aggregate): every
// enabled server's tools, prompts and resources in one list.
const AggregatePath = "/mcp"

// aggSpec is what every caller's aggregate is built from: the serve.Config
// of the endpoint and the file's servers and settings.
type aggSpec struct {
	cfg        serve.Config // Auth: the endpoint's own resource server, if any
	file       *teamconfig.Config
	maxCallers int
}

// newAggregate returns the spec of the aggregated endpoint, or nil when
// the file does not ask for it. Each caller's "child" is a
// bridge/aggregate Aggregator run in-process; each downstream is the
// server's own route reached in-process as the caller (openRoute), so
// the server's authorization, filters, limits, supervision and era
// translation apply as for the caller itself. The Aggregator
// speaks the 2025 handshake; serve translates for 2026-07-28 clients.
func (g *Gateway) newAggregate(file *teamconfig.Config) (*aggSpec, error) {
	if !file.Bridge.Aggregate {
		return nil, nil
	}
	cfg := g.cfg.Base
	cfg.Path = AggregatePath
	cfg.ServerName = "aggregate"
	if err := g.authFor(&cfg, nil); err != nil {
		return nil, errorf("aggregated endpoint: %w", err)
	}
	cfg.Logger = g.cfg.Base.Logger.With().Str("server", "aggregate").Logger()
	cfg.Command, cfg.ToolFilter = nil, nil
	cfg.ChildProtocol = serve.ChildLegacy
	applyLimits(&cfg, file.Bridge)
	spec := &aggSpec{cfg: cfg, file: file, maxCallers: cfg.MaxPrincipals}
	if spec.maxCallers <= 0 {
		spec.maxCallers = 100
	}
	// The Handler of the unauthenticated caller is built now, so that a
	// bad configuration fails New or Reload rather than a request.
	h, _, err := spec.handler(g, &caller{})
	if err != nil {
		return nil, err
	}
	h.Close()
	return spec, nil
}

// servers are the servers of the file c may use, each reached at its
// route as c (openRoute).
func (spec *aggSpec) servers(g *Gateway, c *caller) []aggregate.Server {
	file := spec.file
	var servers []aggregate.Server
	for _, name := range file.Enabled() {
		if !g.mayUse(c, file.Servers[name]) {
			continue
		}
		servers = append(servers, aggregate.Server{
			Name:     name,
			NoPrefix: !file.Servers[name].Options.Prefixed(),
			Open: func(ctx context.Context) (aggregate.Conn, error) {
				return g.openRoute(ctx, name, c)
			},
		})
	}
	return servers
}

// handler builds c's aggregate Handler and the Aggregator it runs.
func (spec *aggSpec) handler(g *Gateway, c *caller) (*serve.Handler, *aggregate.Aggregator, error) {
	cfg := spec.cfg
	cfg.NamedTokens = *g.named.Load() // a token file re-read since the spec was made
	if cfg.Auth != nil {
		cfg.Auth = frontAuth{inner: cfg.Auth}
	}
	if c.key != "" {
		cfg.Logger = cfg.Logger.With().Str("caller", callerLabel(c)).Logger()
	}
	join := time.Duration(spec.file.Bridge.JoinTimeout)
	agg, err := aggregate.New(aggregate.Config{
		Servers:        spec.servers(g, c),
		Separator:      spec.file.Bridge.Separator,
		JoinTimeout:    join,
		ListTimeout:    join, // every step of every server, not only initialize
		OnAbsent:       cfg.Telemetry.AggregateAbsent,
		Logger:         cfg.Logger,
		MaxMessageSize: cfg.MaxMessageSize,
	})
	if err != nil {
		return nil, nil, errorf("aggregated endpoint: %w", err)
	}
	cfg.Run = agg.Run
	h, err := serve.New(cfg)
	if err != nil {
		return nil, nil, errorf("aggregated endpoint: %w", err)
	}
	return h, agg, nil
}

// callerLabel names a caller in the aggregate's logs: the OAuth
// principal, or a prefix of a static token's hash (as serve names it).
func callerLabel(c *caller) string {
	if c.name != "" {
		return c.name
	}
	return c.key[:min(len(c.key), len("token:")+8)]
}

// aggregateChanged reports whether a reload must rebuild the aggregated
// endpoint, ending its sessions: only when its own settings change (it is
// turned on or off, its separator renames every entry, its joinTimeout
// and limits are its Handlers'). A change of the servers is applied to
// the running aggregates instead (aggFront.update), and their sessions go
// on.
func aggregateChanged(old, new *teamconfig.Config) bool {
	ob, nb := old.Bridge, new.Bridge
	return ob.Aggregate != nb.Aggregate || ob.Separator != nb.Separator || ob.JoinTimeout != nb.JoinTimeout ||
		ob.MaxBody != nb.MaxBody || ob.MaxMessageSize != nb.MaxMessageSize || ob.MaxInflight != nb.MaxInflight ||
		ob.MaxSessions != nb.MaxSessions
}
