package gateway

import (
	"context"
	"io"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// AggregatePath is the aggregated endpoint (mcpBridge.aggregate): every
// enabled server's tools, prompts and resources in one list.
const AggregatePath = "/mcp"

// newAggregate builds the Handler of the aggregated endpoint, or returns
// nil when the file does not ask for it. Its "child" is a
// bridge/aggregate Aggregator run in-process; each downstream is the
// server's own route reached through DialServer, so the server's filters,
// limits, supervision and era translation apply as for any client. The
// Aggregator speaks the 2025 handshake; serve translates for 2026-07-28
// clients.
func (g *Gateway) newAggregate(file *teamconfig.Config) (*route, error) {
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
	var servers []aggregate.Server
	for _, name := range file.Enabled() {
		servers = append(servers, aggregate.Server{
			Name: name,
			Dial: func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
				return g.DialServer(ctx, name)
			},
		})
	}
	agg, err := aggregate.New(aggregate.Config{
		Servers:        servers,
		Separator:      file.Bridge.Separator,
		JoinTimeout:    time.Duration(file.Bridge.JoinTimeout),
		Logger:         cfg.Logger,
		MaxMessageSize: cfg.MaxMessageSize,
	})
	if err != nil {
		return nil, errorf("aggregated endpoint: %w", err)
	}
	cfg.Run = agg.Run
	h, err := serve.New(cfg)
	if err != nil {
		return nil, errorf("aggregated endpoint: %w", err)
	}
	return &route{name: "aggregate", h: h, idleCh: make(chan struct{})}, nil
}

// aggregateChanged reports whether a reload must rebuild the aggregated
// endpoint: it lists every enabled server, so any change of the set or of
// a server (its filters show through) counts, as do its own settings.
func aggregateChanged(old, new *teamconfig.Config, ch teamconfig.Changes) bool {
	if old.Bridge.Aggregate != new.Bridge.Aggregate || old.Bridge.Separator != new.Bridge.Separator ||
		old.Bridge.JoinTimeout != new.Bridge.JoinTimeout {
		return true
	}
	return new.Bridge.Aggregate && len(ch.Added)+len(ch.Removed)+len(ch.Changed) > 0
}
