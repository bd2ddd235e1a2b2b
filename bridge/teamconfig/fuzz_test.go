package teamconfig

import (
	"reflect"
	"testing"
)

// FuzzParseConfig: any input is parsed or refused with an ErrConfig, never
// a panic; what is accepted is consistent.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"servers": {"a": {"type": "http", "url": "http://h/${X:-y}"}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"tools": {"allow": ["*"]}}}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["${A}"]}}}`))
	f.Add([]byte(`{"mcpServers": {"0": {"command": "${A:-}${Z:-}"}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}, "mcpBridge": {"servers": {"a": {"prefix": false, "tools": {"allow": ["b_x", "y"]}}, "b": {"prefix": false}}}}`))
	f.Add([]byte(`{"mcpServers": {"r": {"url": "https://h/mcp", "oauth": {"clientId": "${A}", "clientSecret": "${A}", "scopes": ["s"], "grant": "device_code", "timeout": "1m"}}}, "mcpBridge": {"servers": {"q": {"oauth": {}}}}}`))
	look := env("GH_TOKEN", "t", "PATH_PART", "p", "A", "1")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, look)
		if err != nil {
			return
		}
		for name, s := range cfg.Servers {
			if name != s.Name || !ValidName(name) {
				t.Fatalf("server %q named %q", name, s.Name)
			}
			if (s.Command == "") == (s.URL == "") {
				t.Fatalf("server %q: command %q, url %q", name, s.Command, s.URL)
			}
			s.Options.Tools.Allowed("x")
			// An accepted bare server's spelled-out tools are its own.
			if !s.Options.Prefixed() {
				for _, tool := range literalTools(s.Options.Tools) {
					for _, other := range cfg.Enabled() {
						if other != name && !s.Disabled && cfg.Servers[other].Options.Prefixed() && len(tool) > len(other) &&
							tool[:len(other)] == other && (cfg.Bridge.Separator == "" && tool[len(other)] == '_') {
							t.Fatalf("server %q: bare tool %q under the prefix of %q was accepted", name, tool, other)
						}
					}
				}
			}
			if o := s.OAuth; o != nil && !s.Disabled && (s.URL == "" || (o.ClientSecret != "" && o.ClientID == "") || o.Grant == "") {
				t.Fatalf("server %q: oauth %+v accepted", name, o)
			}
		}
		if c := Diff(cfg, cfg); len(c.Added)+len(c.Removed)+len(c.Changed) != 0 || !reflect.DeepEqual(c.Unchanged, cfg.Enabled()) {
			t.Fatalf("Diff(c, c) = %+v", c)
		}
	})
}
