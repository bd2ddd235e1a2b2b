package gateway

import (
	"context"
	"crypto/sha256"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// callerIdle is how long a caller's aggregate may sit with no request
// inside it and no session before it is closed.
const callerIdle = 10 * time.Minute

// aggFront is the aggregated endpoint: one aggregate Handler per caller
// (caller.go), made on the caller's first request. Requests are told
// apart by the credential they carry, verified here once; a request with
// none the gateway accepts goes to the unauthenticated caller's Handler,
// which refuses it with the endpoint's challenge (or, with inbound auth
// off, serves it: then that is everyone).
type aggFront struct {
	g    *Gateway
	spec *aggSpec

	mu      sync.Mutex
	callers map[string]*callerAgg // by caller.key
	closed  bool
}

// A callerAgg is one caller's aggregate: its Handler, inside the route
// bookkeeping that lets it finish its requests when retired.
type callerAgg struct {
	c    *caller
	rt   *route
	agg  *aggregate.Aggregator
	last time.Time // guarded by aggFront.mu
}

func newAggFront(g *Gateway, spec *aggSpec) *aggFront {
	return &aggFront{g: g, spec: spec, callers: map[string]*callerAgg{}}
}

// ServeHTTP serves one request of the aggregated endpoint.
func (f *aggFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := f.g.identify(r)
	if c == nil {
		c = &caller{}
	} else if c.name != "" {
		r = r.WithContext(contextWithCaller(r, c))
	}
	ca, status := f.get(c)
	if ca == nil {
		msg := "mcp-bridge: the aggregated endpoint serves too many principals at once (--max-principals)"
		if f.g.refusing.Load() {
			msg = "mcp-bridge is shutting down"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(status)
		w.Write(wire.ErrorResponse(nil, wire.CodeInternalError, msg, nil))
		return
	}
	ca.rt.enter()
	defer ca.rt.leave()
	ca.rt.h.ServeHTTP(w, r)
}

// get returns c's aggregate, making it on c's first request; nil (and the
// status to answer) past the bound of callers.
func (f *aggFront) get(c *caller) (*callerAgg, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if ca := f.callers[c.key]; ca != nil {
		ca.last = now
		return ca, 0
	}
	if f.closed || f.g.refusing.Load() {
		return nil, http.StatusServiceUnavailable
	}
	if len(f.callers) >= f.spec.maxCallers && !f.evictIdle(now, true) {
		f.g.log.Warn().Int("callers", len(f.callers)).Msg("aggregate: a new principal would need an aggregate past --max-principals; refused (503)")
		return nil, http.StatusServiceUnavailable
	}
	h, agg, err := f.spec.handler(f.g, c)
	if err != nil {
		f.g.log.Error().Err(err).Msg("aggregate: building a caller's aggregate")
		return nil, http.StatusInternalServerError
	}
	ca := &callerAgg{c: c, rt: &route{name: "aggregate", h: h, idleCh: make(chan struct{})}, agg: agg, last: now}
	f.g.startLike(h)
	f.callers[c.key] = ca
	return ca, 0
}

// evictIdle retires the least recently used aggregate that has no
// request inside it and no session (all of them past callerIdle when not
// forced); it reports whether it retired one. f.mu is held.
func (f *aggFront) evictIdle(now time.Time, one bool) bool {
	var idle []*callerAgg
	for _, ca := range f.callers {
		if !one && now.Sub(ca.last) < callerIdle {
			continue
		}
		if ca.rt.busy() || !sessionsEnded(ca.rt.h) {
			continue
		}
		idle = append(idle, ca)
	}
	if len(idle) == 0 {
		return false
	}
	slices.SortFunc(idle, func(a, b *callerAgg) int { return a.last.Compare(b.last) })
	if one {
		idle = idle[:1]
	}
	for _, ca := range idle {
		f.drop(ca, "idle")
	}
	return true
}

// drop retires one caller's aggregate. f.mu is held.
func (f *aggFront) drop(ca *callerAgg, why string) {
	delete(f.callers, ca.c.key)
	f.g.retireCaller(ca, why)
}

// retireCaller retires a caller's aggregate: its requests in flight
// finish first.
func (g *Gateway) retireCaller(ca *callerAgg, why string) {
	g.retire(ca.rt, why)
}

// reapCallers retires the callers' aggregates idle for callerIdle, every
// minute, until the Gateway closes.
func (g *Gateway) reapCallers() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-g.life.Closing():
			return
		case now := <-t.C:
			g.mu.RLock()
			f := g.agg
			g.mu.RUnlock()
			if f != nil {
				f.mu.Lock()
				f.evictIdle(now, false)
				f.mu.Unlock()
			}
		}
	}
}

// update applies a reload that changed the servers (not the aggregate's
// own settings) to every caller's running aggregate: each gets the
// servers of file it may use, restarted are the changed ones, and their
// sessions go on (aggregate.Aggregator.SetServers).
func (f *aggFront) update(file *teamconfig.Config, changed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spec := *f.spec
	spec.file = file
	f.spec = &spec
	for _, ca := range f.callers {
		if err := ca.agg.SetServers(spec.servers(f.g, ca.c), changed); err != nil {
			f.g.log.Error().Err(err).Msg("aggregate: applying the reload to a caller's aggregate")
		}
	}
}

// dropRevoked retires the aggregates of static-token callers whose token
// is no longer accepted (a re-read token file): their sessions end, and
// the token reaches no route any more.
func (f *aggFront) dropRevoked(sums map[[32]byte]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ca := range f.callers {
		if !ca.c.static {
			continue
		}
		tok, _ := auth.Bearer(ca.c.authorization)
		if !sums[sha256.Sum256([]byte(tok))] {
			f.drop(ca, "token revoked")
		}
	}
}

// handlers returns every caller's Handler.
func (f *aggFront) handlers() []*serve.Handler {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*serve.Handler, 0, len(f.callers))
	for _, ca := range f.callers {
		out = append(out, ca.rt.h)
	}
	return out
}

// each calls fn for every caller's aggregate, f.mu held.
func (f *aggFront) each(fn func(*callerAgg)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ca := range f.callers {
		fn(ca)
	}
}

// close stops taking callers and returns the aggregates it had, for the
// caller to close or retire.
func (f *aggFront) close() []*callerAgg {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	out := slices.Collect(maps.Values(f.callers))
	f.callers = map[string]*callerAgg{}
	return out
}

// sessionsEnded reports whether h has no 2025 session.
func sessionsEnded(h *serve.Handler) bool {
	select {
	case <-h.SessionsEnded():
		return true
	default:
		return false
	}
}

// busy reports whether a request is inside the route.
func (rt *route) busy() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.active > 0
}

// contextWithCaller marks r as verified by the front as c.
func contextWithCaller(r *http.Request, c *caller) context.Context {
	return context.WithValue(r.Context(), verifiedKey{}, c)
}
