package serve

import (
	"context"
	"net/http"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
)

// principalChildren gives each principal its own shared child under
// ChildPerPrincipal. The Handler's first child goes to the first principal
// that comes (with no tokens configured there is only one, the anonymous
// one); every later principal gets a child of its own, started on demand
// and supervised like the first. There are at most Config.MaxPrincipals:
// static tokens are few, but every OAuth subject is a principal.
type principalChildren struct {
	h       *Handler
	mu      sync.Mutex
	ctx     context.Context // the Handler's run context; nil before Start
	stopped bool
	byP     map[string]*sharedChild // by Principal.Key
}

// childFor returns the shared child that serves r's modern requests, or
// nil when r's principal would need a child past Config.MaxPrincipals.
func (h *Handler) childFor(r *http.Request) *sharedChild {
	if !h.cfg.perPrincipal() {
		return h.shared
	}
	return h.principals.get(h.guard.principal(r))
}

func (pc *principalChildren) start(ctx context.Context) {
	pc.mu.Lock()
	pc.ctx = ctx
	pc.mu.Unlock()
}

func (pc *principalChildren) get(p auth.Principal) *sharedChild {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if sc := pc.byP[p.Key()]; sc != nil {
		return sc
	}
	if pc.byP == nil {
		pc.byP = map[string]*sharedChild{p.Key(): pc.h.shared}
		pc.h.shared.setPrincipal(p)
		pc.h.log.Info().Stringer("principal", p).Msg("the first child now serves this principal only")
		return pc.h.shared
	}
	if pc.stopped || pc.ctx == nil {
		// Shutting down (or not started): no new child; this one answers
		// 503 like any child that is not ready.
		return pc.h.shared
	}
	if len(pc.byP) >= pc.h.cfg.maxPrincipals() {
		pc.h.warn.Warn(pc.h.log, "max_principals").Int("children", len(pc.byP)).Msg("a new principal would need a child past --max-principals; refused (503)")
		return nil
	}
	sc := newSharedChild(pc.h)
	sc.from = pc.h.shared
	sc.setPrincipal(p)
	pc.byP[p.Key()] = sc
	ctx := pc.ctx
	// Under pc.mu with stop not yet called, and Close closes h.life only
	// after stop: Go accepts.
	pc.h.life.Go(func() { sc.run(ctx) })
	pc.h.log.Info().Stringer("principal", p).Int("children", len(pc.byP)).Msg("started a child for a new principal")
	return sc
}

// stop refuses new children; Close calls it before it waits for them.
func (pc *principalChildren) stop() {
	pc.mu.Lock()
	pc.stopped = true
	pc.mu.Unlock()
}

// others returns the children besides the Handler's first one.
func (pc *principalChildren) others() []*sharedChild {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []*sharedChild
	for _, sc := range pc.byP {
		if sc != pc.h.shared {
			out = append(out, sc)
		}
	}
	return out
}
