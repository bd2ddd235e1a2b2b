package gateway

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// Reload applies a new configuration: added servers start, removed (or
// now disabled) ones shut down, changed ones restart — a new Handler takes
// the route at once, the old one finishes its requests in flight and
// closes — and unchanged ones keep their Handler, children and sessions.
// A server whose Handler cannot be built fails the whole reload, before
// anything changed.
func (g *Gateway) Reload(file *teamconfig.Config) (teamconfig.Changes, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed() {
		return teamconfig.Changes{}, errorf("reload after Close")
	}
	ch := teamconfig.Diff(g.file, file)
	var agg *aggSpec
	rebuildAgg := aggregateChanged(g.file, file)
	if rebuildAgg {
		var err error
		if agg, err = g.newAggregate(file); err != nil {
			return teamconfig.Changes{}, err
		}
	}
	fresh := map[string]*route{}
	for _, name := range append(append([]string(nil), ch.Added...), ch.Changed...) {
		rt, err := g.newRoute(file, file.Servers[name])
		if err != nil {
			for _, r := range fresh {
				r.h.Close()
			}
			return teamconfig.Changes{}, err
		}
		fresh[name] = rt
	}
	for _, name := range ch.Removed {
		g.retire(g.routes[name], "removed")
		delete(g.routes, name)
	}
	for _, name := range ch.Changed {
		g.retire(g.routes[name], "changed")
	}
	for name, rt := range fresh {
		if g.started.Load() {
			rt.h.Start()
		}
		if g.isDraining() {
			rt.h.BeginDrain()
		}
		g.routes[name] = rt
	}
	for _, name := range ch.Unchanged {
		// The same settings; the entry object is the new file's.
		g.routes[name].srv = file.Servers[name]
	}
	switch {
	case rebuildAgg:
		for _, ca := range g.setAggregate(agg) {
			g.retireCaller(ca, "the aggregated endpoint's settings changed")
		}
	case g.agg != nil && len(ch.Added)+len(ch.Removed)+len(ch.Changed) > 0:
		// After the routes: a changed server is dialed at its new one.
		g.agg.update(file, ch.Changed)
	}
	g.file = file
	g.log.Info().Strs("added", ch.Added).Strs("removed", ch.Removed).Strs("changed", ch.Changed).
		Int("unchanged", len(ch.Unchanged)).Msg("configuration reloaded")
	return ch, nil
}
