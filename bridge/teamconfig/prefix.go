package teamconfig

import (
	"slices"
	"strings"
)

// checkPrefixes refuses a configuration in which a server with
// "prefix": false would expose a tool name that another enabled server
// exposes too, as far as the file shows it: the names an allow list spells
// out (no glob) and the tools filter lets through. A bare name of server U
// collides with
//   - the same bare name of another unprefixed server, and
//   - any name under another server V's prefix, <V><sep>…, which is V's.
//
// Names the file does not spell out (a server without an allow list, its
// prompts) are only known at run time, where the aggregate exposes a
// contested bare name to neither server and logs it. offs locates each
// server's mcpBridge.servers entry for the error.
func (p *parser) checkPrefixes(cfg *Config, offs map[string]int64) error {
	sep := cfg.Bridge.Separator
	if sep == "" {
		sep = "_" // the aggregate's default
	}
	enabled := cfg.Enabled()
	for _, u := range enabled {
		us := cfg.Servers[u]
		if us.Options.Prefixed() {
			continue
		}
		for _, name := range literalTools(us.Options.Tools) {
			for _, v := range enabled {
				if v == u {
					continue
				}
				vs := cfg.Servers[v]
				switch {
				case vs.Options.Prefixed() && strings.HasPrefix(name, v+sep):
					return p.errorf(offs[u], "mcpBridge.servers.%s: \"prefix\": false exposes the tool %q bare, a name under the prefix of server %q (%s%s…); rename or deny one of them", u, name, v, v, sep)
				case !vs.Options.Prefixed() && slices.Contains(literalTools(vs.Options.Tools), name):
					return p.errorf(offs[u], "mcpBridge.servers.%s: \"prefix\": false exposes the tool %q bare, and so does server %q; deny it on one of them or prefix one", u, name, v)
				}
			}
		}
	}
	return nil
}

// literalTools are the tool names a filter's allow list spells out (not
// globs) that the filter lets through.
func literalTools(f *ToolFilter) []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, g := range f.Allow {
		if !strings.ContainsAny(g, `*?[\`) && f.Allowed(g) {
			out = append(out, g)
		}
	}
	return out
}
