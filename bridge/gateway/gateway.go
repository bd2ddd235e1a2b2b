package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// ErrUnknownServer is returned for a server name the configuration does
// not enable.
var ErrUnknownServer = errors.New("gateway: no such enabled server")

// Config configures a Gateway.
type Config struct {
	// Base is the serve.Config every server's Handler starts from: inbound
	// auth, origins, CheckHost, timeouts, buffers. Command, Run, Path,
	// ToolFilter, SessionMode, ChildProtocol, ChildPer and the limits the
	// file sets are filled in per server; Logger gets a "server" field.
	Base serve.Config

	// Auth, if set, gives each endpoint its OAuth resource server: path
	// is the endpoint (/servers/<name>/mcp, or /mcp for the aggregate) and
	// scopes what the file's mcpBridge.servers.<name>.scopes require on
	// top of the common ones. It overrides Base.Auth.
	Auth func(path string, scopes []string) (auth.Authenticator, error)

	// HTTPClient, if set, carries the requests to remote servers (tests,
	// custom TLS).
	HTTPClient *http.Client

	// RemoteClient gives the HTTP client of a remote entry with "oauth"
	// settings: an OAuth client of that server, which the caller builds
	// (one login store, one Group for all entries) and closes after
	// Close. Without it such an entry is refused at New and at reload.
	RemoteClient func(s *teamconfig.Server) (*http.Client, error)

	// RetireTimeout bounds how long a removed or changed server's old
	// Handler may finish the requests it has in flight before it is
	// closed. If zero, 10s.
	RetireTimeout time.Duration

	// Logger receives the gateway's own logs.
	Logger zerolog.Logger
}

func (c *Config) retireTimeout() time.Duration {
	if c.RetireTimeout > 0 {
		return c.RetireTimeout
	}
	return 10 * time.Second
}

// A Gateway is an http.Handler for every server of a configuration file.
// Call Start before serving, BeginShutdown when the listener stops, and
// Close to stop every server and join every goroutine.
type Gateway struct {
	cfg Config
	log zerolog.Logger

	mu      sync.RWMutex
	file    *teamconfig.Config
	routes  map[string]*route // enabled servers
	agg     *aggFront         // the aggregated endpoint; nil when off
	started atomic.Bool       // read by a caller's first request, under aggFront's lock

	aggAuth    auth.Authenticator // the aggregated endpoint's resource server; nil without OAuth
	staticSums map[[32]byte]bool  // SHA-256 of every static token (identify)

	authRequired bool                              // some inbound credential was configured at New
	named        atomic.Pointer[[]auth.NamedToken] // the token file's tokens now (SetTokens), for Handlers made later

	draining lifecycle.Signal // BeginDrain
	refusing atomic.Bool      // Refuse or BeginShutdown: no new caller's aggregate
	// life owns the retiring handlers, the reaper and AggregateClient's
	// requests; Close closes it under mu, so whoever checks closed()
	// under mu may start goroutines on it.
	life lifecycle.Group
}

// New builds a Handler for every enabled server of file. It starts
// nothing.
func New(cfg Config, file *teamconfig.Config) (*Gateway, error) {
	g := &Gateway{
		cfg:    cfg,
		log:    cfg.Logger,
		file:   file,
		routes: map[string]*route{},
	}
	g.authRequired = authConfigured(&cfg)
	g.named.Store(&cfg.Base.NamedTokens)
	g.setStatic(cfg.Base.NamedTokens)
	for _, name := range file.Enabled() {
		rt, err := g.newRoute(file, file.Servers[name])
		if err != nil {
			for _, r := range g.routes {
				r.h.Close()
			}
			return nil, err
		}
		g.routes[name] = rt
	}
	spec, err := g.newAggregate(file)
	if err != nil {
		for _, r := range g.routes {
			r.h.Close()
		}
		return nil, err
	}
	g.setAggregate(spec)
	return g, nil
}

// Start starts every server.
func (g *Gateway) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started.Load() {
		return
	}
	g.started.Store(true)
	for _, name := range sortedRoutes(g.routes) {
		g.routes[name].h.Start()
	}
	if g.agg != nil {
		for _, h := range g.agg.handlers() {
			h.Start()
		}
	}
	g.life.Go(g.reapCallers)
	g.log.Info().Strs("servers", sortedRoutes(g.routes)).Msg("gateway started")
}

// closed reports whether Close has begun; under g.mu it stays false until
// the lock is released.
func (g *Gateway) closed() bool { return g.life.State() != lifecycle.Running }

// Servers returns the names of the enabled servers, sorted.
func (g *Gateway) Servers() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return sortedRoutes(g.routes)
}

// Handler returns the serve.Handler of an enabled server.
func (g *Gateway) Handler(name string) (*serve.Handler, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	rt, ok := g.routes[name]
	if !ok {
		return nil, false
	}
	return rt.h, true
}

func (g *Gateway) handlers() []*serve.Handler {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]*serve.Handler, 0, len(g.routes)+1)
	for _, rt := range g.routes {
		out = append(out, rt.h)
	}
	if g.agg != nil {
		out = append(out, g.agg.handlers()...)
	}
	return out
}

// BeginDrain makes /readyz (the gateway's and every server's) answer 503;
// everything is still served.
func (g *Gateway) BeginDrain() {
	g.draining.Fire()
	for _, h := range g.handlers() {
		h.BeginDrain()
	}
}

// Refuse makes every server refuse new work except live 2025 sessions'
// (serve.Handler.Refuse).
func (g *Gateway) Refuse() {
	g.BeginDrain()
	g.refusing.Store(true)
	for _, h := range g.handlers() {
		h.Refuse()
	}
}

// SessionsEnded returns a channel closed once no server has a 2025
// session left (or the Gateway is closed).
func (g *Gateway) SessionsEnded() <-chan struct{} {
	done := make(chan struct{})
	hs := g.handlers()
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed() {
		close(done)
		return done
	}
	g.life.Go(func() { waitSessions(hs, g.life.Closing(), done) })
	return done
}

// waitSessions closes done once every one of hs has no session left, or
// stop is closed.
func waitSessions(hs []*serve.Handler, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for _, h := range hs {
		select {
		case <-h.SessionsEnded():
		case <-stop:
			return
		}
	}
}

// BeginShutdown makes every server stop accepting requests and end its
// long-lived streams.
func (g *Gateway) BeginShutdown() {
	g.BeginDrain()
	g.refusing.Store(true)
	for _, h := range g.handlers() {
		h.BeginShutdown()
	}
}

// SetTokens replaces every endpoint's token-file tokens (a re-read of
// --auth-token-file); servers started later get them too.
func (g *Gateway) SetTokens(tokens []auth.NamedToken) {
	g.mu.Lock()
	g.cfg.Base.NamedTokens = tokens
	g.named.Store(&tokens)
	g.setStatic(tokens)
	sums, agg := g.staticSums, g.agg
	g.mu.Unlock()
	if agg != nil {
		agg.dropRevoked(sums)
	}
	for _, h := range g.handlers() {
		h.SetTokens(tokens)
	}
}

// WaitDetached waits until every server's streams that left net/http
// (serve.Handler.WaitDetached) have ended, or ctx is done: an
// http.Server's Shutdown does not wait for them.
func (g *Gateway) WaitDetached(ctx context.Context) error {
	for _, h := range g.handlers() {
		if err := h.WaitDetached(ctx); err != nil {
			return err
		}
	}
	return nil
}

// InFlight returns the requests every server's children have not answered.
func (g *Gateway) InFlight() int {
	n := 0
	for _, h := range g.handlers() {
		n += h.InFlight()
	}
	return n
}

// Close stops every server (serve.Handler.Close) and joins every goroutine
// of the Gateway, retiring handlers included.
func (g *Gateway) Close() error {
	g.BeginShutdown()
	g.mu.Lock()
	g.life.Close()
	routes := slices.Collect(maps.Values(g.routes))
	if g.agg != nil {
		for _, ca := range g.agg.close() {
			routes = append(routes, ca.rt)
		}
		g.agg = nil
	}
	g.routes = map[string]*route{}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, rt := range routes {
		wg.Go(func() { rt.h.Close() })
	}
	wg.Wait()
	g.life.Wait()
	return nil
}

func (g *Gateway) isDraining() bool { return g.draining.Fired() }

// retire shuts an old Handler down in the background: no new work, its
// in-flight requests get RetireTimeout to finish, then Close; after, if
// given, run once it is closed.
func (g *Gateway) retire(rt *route, why string, after ...func()) {
	rt.h.BeginShutdown()
	if !g.life.Go(func() { g.finishRetire(rt, why, after) }) {
		// Close has begun: nothing would join the goroutine, and Close
		// does not know this route any more. Close it here.
		g.finishRetire(rt, why, after)
	}
}

// finishRetire waits for rt's requests in flight (at most RetireTimeout,
// not past Close), closes its Handler and runs after.
func (g *Gateway) finishRetire(rt *route, why string, after []func()) {
	t := time.NewTimer(g.cfg.retireTimeout())
	defer t.Stop()
	select {
	case <-rt.idle():
	case <-t.C:
		g.log.Warn().Str("server", rt.name).Msg("retire timeout: abandoning the old handler's requests in flight")
	case <-g.life.Closing():
	}
	rt.h.Close()
	for _, f := range after {
		f()
	}
	g.log.Info().Str("server", rt.name).Str("why", why).Msg("server stopped")
}

func errorf(format string, args ...any) error { return fmt.Errorf("gateway: "+format, args...) }

// setAggregate puts the aggregated endpoint built from spec in place (nil:
// off) and returns the callers' aggregates of the one it replaces, for
// the caller to retire. g.mu is held (or g not yet shared).
func (g *Gateway) setAggregate(spec *aggSpec) []*callerAgg {
	var old []*callerAgg
	if g.agg != nil {
		old = g.agg.close()
	}
	g.agg, g.aggAuth = nil, nil
	if spec != nil {
		g.agg = newAggFront(g, spec)
		g.aggAuth = spec.cfg.Auth
		if g.aggAuth == nil {
			g.aggAuth = g.cfg.Base.Auth
		}
	}
	return old
}

// startLike brings a Handler made after Start to the state of the others:
// started, and draining if they are.
func (g *Gateway) startLike(h *serve.Handler) {
	if g.started.Load() {
		h.Start()
	}
	if g.isDraining() {
		h.BeginDrain()
	}
}
