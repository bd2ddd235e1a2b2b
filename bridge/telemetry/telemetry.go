package telemetry

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/rs/zerolog"
)

// Side says which end of MCP the bridge plays: serve is the server to its
// HTTP clients, connect the client of its remote.
type Side string

const (
	Server Side = "server" // mcp.server.operation.duration, SERVER spans
	Client Side = "client" // mcp.client.operation.duration, CLIENT spans
)

// Options configure New.
type Options struct {
	Side Side

	// Metrics keeps counters and histograms (Handler serves them to
	// Prometheus).
	Metrics bool

	// Tracing exports spans over OTLP/HTTP as the OTEL_* environment says
	// (TracingFromEnv tells whether it says anything).
	Tracing bool

	// Getenv reads the OTEL_* variables; if nil, os.Getenv.
	Getenv func(string) string

	// Version is the bridge's version (service.version).
	Version string

	// Logger receives export errors and drops (rate-limited: one line per
	// kind per 10 s).
	Logger zerolog.Logger
}

// Telemetry holds the registry and the tracer of one process. Scope binds it
// to one served (or remote) MCP server.
type Telemetry struct {
	side Side
	log  zerolog.Logger

	met *metrics // nil: no metrics

	tracer *tracer // nil: no tracing

	mu     sync.Mutex
	scopes map[scopeKey]*Scope
}

type scopeKey struct {
	side Side
	name string
}

// New returns a Telemetry, or nil when opts ask for neither metrics nor
// tracing (nil is valid everywhere and does nothing).
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	if !opts.Metrics && !opts.Tracing {
		return nil, nil
	}
	if opts.Side != Server && opts.Side != Client {
		return nil, errors.New("telemetry: Options.Side must be Server or Client")
	}
	t := &Telemetry{side: opts.Side, log: opts.Logger, scopes: map[scopeKey]*Scope{}}
	if opts.Metrics {
		t.initMetrics()
	}
	if opts.Tracing {
		if err := t.initTracing(ctx, opts); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Handler serves the metrics in the Prometheus exposition format the
// scraper negotiates (text by default) at any path it is mounted on;
// it answers 404 when metrics are off.
func (t *Telemetry) Handler() http.Handler {
	if t == nil || t.met == nil {
		return http.NotFoundHandler()
	}
	return t.met.handler
}

// Shutdown flushes the spans still queued (within ctx) and stops the
// exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.tracer == nil {
		return nil
	}
	return t.tracer.shutdown(ctx)
}

// Scope returns the Scope of the MCP server called name ("" for the single
// server of a plain serve or connect) on the Telemetry's own side
// (Options.Side). Scopes are kept for the process's life, so a server that
// is reloaded keeps its counters; a nil Telemetry returns a nil Scope.
func (t *Telemetry) Scope(name string) *Scope {
	if t == nil {
		return nil
	}
	return t.ScopeFor(t.side, name)
}

// ScopeFor is Scope on a given side: serve reports as the Server of its
// clients and connect as the Client of its remote whatever the
// Telemetry's default, so that a gateway running both shares one registry.
func (t *Telemetry) ScopeFor(side Side, name string) *Scope {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := scopeKey{side, name}
	if s, ok := t.scopes[k]; ok {
		return s
	}
	s := newScope(t, side, name)
	t.scopes[k] = s
	return s
}
