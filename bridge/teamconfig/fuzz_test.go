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
			if o := s.OAuth; o != nil && !s.Disabled && (s.URL == "" || (o.ClientSecret != "" && o.ClientID == "") || o.Grant == "") {
				t.Fatalf("server %q: oauth %+v accepted", name, o)
			}
		}
		if c := Diff(cfg, cfg); len(c.Added)+len(c.Removed)+len(c.Changed) != 0 || !reflect.DeepEqual(c.Unchanged, cfg.Enabled()) {
			t.Fatalf("Diff(c, c) = %+v", c)
		}
	})
}
