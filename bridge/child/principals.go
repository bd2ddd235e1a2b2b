package child

import (
	"context"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
)

// Principals gives each principal its own shared child under
// ChildPerPrincipal. The Handler's first child goes to the first principal
// that comes (with no tokens configured there is only one, the anonymous
// one); every later principal gets a child of its own, started on demand
// and supervised like the first. There are at most Config.MaxPrincipals:
// static tokens are few, but every OAuth subject is a principal.
type Principals struct {
	env     *Env
	first   *Shared // the Handler's first child
	mu      sync.Mutex
	ctx     context.Context // the Handler's run context; nil before Start
	stopped bool
	byP     map[string]*Shared // by Principal.Key
}

// NewPrincipals returns the children of the principals, first the
// Handler's first child.
func NewPrincipals(env *Env, first *Shared) *Principals {
	return &Principals{env: env, first: first}
}

// Start lets children start under ctx, the Handler's run.
func (pc *Principals) Start(ctx context.Context) {
	pc.mu.Lock()
	pc.ctx = ctx
	pc.mu.Unlock()
}

// Get returns the child that serves p, nil past MaxPrincipals.
func (pc *Principals) Get(p auth.Principal) *Shared {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if sc := pc.byP[p.Key()]; sc != nil {
		return sc
	}
	if pc.byP == nil {
		pc.byP = map[string]*Shared{p.Key(): pc.first}
		pc.first.setPrincipal(p)
		pc.env.Log.Info().Stringer("principal", p).Msg("the first child now serves this principal only")
		return pc.first
	}
	if pc.stopped || pc.ctx == nil {
		// Shutting down (or not started): no new child; this one answers
		// 503 like any child that is not ready.
		return pc.first
	}
	if len(pc.byP) >= pc.env.MaxPrincipals {
		pc.env.Warn.Warn(pc.env.Log, "max_principals").Int("children", len(pc.byP)).Msg("a new principal would need a child past --max-principals; refused (503)")
		return nil
	}
	sc := NewShared(pc.env)
	sc.from = pc.first
	sc.setPrincipal(p)
	pc.byP[p.Key()] = sc
	ctx := pc.ctx
	// Under pc.mu with stop not yet called, and Close closes h.life only
	// after stop: Go accepts.
	pc.env.Life.Go(func() { sc.Run(ctx) })
	pc.env.Log.Info().Stringer("principal", p).Int("children", len(pc.byP)).Msg("started a child for a new principal")
	return sc
}

// Stop refuses new children; Close calls it before it waits for them.
func (pc *Principals) Stop() {
	pc.mu.Lock()
	pc.stopped = true
	pc.mu.Unlock()
}

// Others returns the children besides the Handler's first one.
func (pc *Principals) Others() []*Shared {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []*Shared
	for _, sc := range pc.byP {
		if sc != pc.first {
			out = append(out, sc)
		}
	}
	return out
}
