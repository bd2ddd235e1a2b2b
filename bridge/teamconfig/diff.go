package teamconfig

import "reflect"

// Changes says what a reload has to do.
type Changes struct {
	Added     []string // enabled now, not before: start them
	Removed   []string // enabled before, not now (deleted or disabled): stop them
	Changed   []string // enabled in both, configured differently: restart them
	Unchanged []string // enabled in both, the same: keep them and their sessions
}

// Diff compares the enabled servers of two configurations (names sorted).
// A server counts as changed when its entry or its mcpBridge options
// differ, or when the global limits every server gets do.
func Diff(old, new *Config) Changes {
	var c Changes
	limits := func(b Bridge) Bridge { b.Listen, b.Aggregate, b.Separator, b.JoinTimeout = "", false, "", 0; return b }
	sameLimits := limits(old.Bridge) == limits(new.Bridge)
	was := map[string]bool{}
	for _, name := range old.Enabled() {
		was[name] = true
	}
	for _, name := range new.Enabled() {
		switch {
		case !was[name]:
			c.Added = append(c.Added, name)
		case !sameLimits || !reflect.DeepEqual(old.Servers[name], new.Servers[name]):
			c.Changed = append(c.Changed, name)
		default:
			c.Unchanged = append(c.Unchanged, name)
		}
		delete(was, name)
	}
	for _, name := range old.Enabled() {
		if was[name] {
			c.Removed = append(c.Removed, name)
		}
	}
	return c
}
