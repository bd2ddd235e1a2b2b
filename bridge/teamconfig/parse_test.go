package teamconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// A Claude Desktop file with a remote entry and host-only keys, plus the
// bridge's section.
const sample = `{
  "mcpServers": {
    "memos": {"command": "memos", "args": ["--dir", "${DATA:-/tmp/memos}"], "env": {"LEVEL": "debug"}, "cwd": "/srv", "timeout": 30000, "autoApprove": ["add"]},
    "github": {"type": "http", "url": "https://api.example.com/${PATH_PART}/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}, "alwaysAllow": []},
    "old": {"command": "old-server", "args": ["${UNSET_BUT_DISABLED}"], "disabled": true}
  },
  "mcpBridge": {
    "listen": "127.0.0.1:9000", "aggregate": true, "separator": "__", "maxBody": 1048576, "joinTimeout": "1.5s",
    "servers": {"memos": {"sessionMode": "shared", "childProtocol": "legacy", "childPer": "principal",
      "tools": {"allow": ["memo_*"], "deny": ["memo_delete"]}, "scopes": ["memos:read"]}}
  }
}`

func TestParseSample(t *testing.T) {
	cfg, err := Parse([]byte(sample), env("GH_TOKEN", "s3cret", "PATH_PART", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Servers["memos"]
	want := &Server{Name: "memos", Command: "memos", Args: []string{"--dir", "/tmp/memos"}, Env: map[string]string{"LEVEL": "debug"}, Cwd: "/srv",
		Options: Options{SessionMode: "shared", ChildProtocol: "legacy", ChildPer: "principal",
			Tools: &ToolFilter{Allow: []string{"memo_*"}, Deny: []string{"memo_delete"}}, Scopes: []string{"memos:read"}}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("memos = %+v\nwant %+v", m, want)
	}
	g := cfg.Servers["github"]
	if !g.Remote() || g.URL != "https://api.example.com/v1/mcp" || g.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("github = %+v", g)
	}
	if !cfg.Servers["old"].Disabled {
		t.Error("old is not disabled")
	}
	if got := cfg.Enabled(); !reflect.DeepEqual(got, []string{"github", "memos"}) {
		t.Errorf("Enabled = %v", got)
	}
	wantB := Bridge{Listen: "127.0.0.1:9000", Aggregate: true, Separator: "__", MaxBody: 1 << 20, JoinTimeout: Duration(1500 * time.Millisecond)}
	if cfg.Bridge != wantB {
		t.Errorf("Bridge = %+v", cfg.Bridge)
	}
}

// VS Code's .vscode/mcp.json says "servers".
func TestParseVSCodeServers(t *testing.T) {
	cfg, err := Parse([]byte(`{"inputs": [], "servers": {"a": {"type": "stdio", "command": "x"}, "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Enabled()) != 2 || !cfg.Servers["b"].Remote() {
		t.Fatalf("servers = %+v", cfg.Servers)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"missing variable", `{"mcpServers": {"gh": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}`,
			"line 1, column 23: mcpServers.gh: headers.Authorization: environment variable GH_TOKEN is not set"},
		{"sse without url", `{"mcpServers": {"s": {"type": "sse", "command": "x"}}}`, `type "sse" needs a "url"`},
		{"bad name", `{"mcpServers": {"a/b": {"command": "x"}}}`, `server name "a/b"`},
		{"neither", `{"mcpServers": {"a": {"timeout": 5}}}`, `needs a "command"`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, `both "command" and "url"`},
		{"unknown bridge key", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"maxbody": 5}}`, `unknown field "maxbody"`},
		{"unknown server option", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"tool": {}}}}}`, `unknown field "tool"`},
		{"option for no server", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"b": {}}}}`, "mcpBridge.servers.b: no server of that name"},
		{"bad mode", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"sessionMode": "solo"}}}}`, `sessionMode "solo"`},
		{"bad glob", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"tools": {"deny": ["["]}}}}}`, `glob "["`},
		{"type error", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-v\"}}}", "line 2, column"},
		{"duplicate", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `"a" appears twice`},
		{"syntax", `{"mcpServers": {"a": {"command": "x",}}}`, "invalid character"},
		{"no servers", `{"mcpBridge": {}}`, `no "mcpServers"`},
		{"vs code input", `{"servers": {"a": {"command": "x", "env": {"K": "${input:key}"}}}}`, "not supported"},
		{"command expands to nothing", `{"mcpServers": {"a": {"command": "${NOPE:-}"}}}`, `command "${NOPE:-}" expands to an empty string`},
		{"url expands to nothing", `{"mcpServers": {"a": {"url": "${NOPE:-}"}}}`, `url "${NOPE:-}" expands to an empty string`},
		{"url scheme", `{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}`, "http:// or https://"},
		{"join timeout number", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"joinTimeout": 5000}}`, `joinTimeout must be a string such as "5s"`},
		{"join timeout unit", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"joinTimeout": "5"}}`, `joinTimeout "5"`},
		{"join timeout negative", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"joinTimeout": "-1s"}}`, `want a positive duration`},
		{"join timeout huge", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"joinTimeout": "2h"}}`, `up to 10m0s`},
		{"key ttl zero", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"oauthIssuers": {"https://as.example": {"keyTTL": "0s"}}}}`, `keyTTL "0s": want a duration from 1s`},
		{"key ttl number", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"oauthIssuers": {"https://as.example": {"keyTTL": 60}}}}`, `keyTTL must be a string`},
		{"issuer option unknown", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"oauthIssuers": {"https://as.example": {"keyTtl": "1m"}}}}`, `unknown field "keyTtl"`},
		{"issuer not a URL", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"oauthIssuers": {"as.example": {"keyTTL": "1m"}}}}`, `the key is an issuer URL`},
		{"start timeout number", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"childStartTimeout": 90}}}}`, `childStartTimeout must be a string such as "90s"`},
		{"start timeout zero", `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"childStartTimeout": "0s"}}}}`, `want a positive duration up to 1h0m0s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), env())
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an ErrConfig containing %q", err, tc.want)
			}
		})
	}
}

// An error about a header never shows the header's value, only the
// variable's name.
func TestParseErrorHidesValues(t *testing.T) {
	_, err := Parse([]byte(`{"mcpServers": {"gh": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer tok-123 ${NOPE}"}}}}`), env())
	if err == nil || strings.Contains(err.Error(), "tok-123") || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("err = %v", err)
	}
}

// mcpBridge.oauthIssuers sets a key lifetime per issuer; it restarts no
// server.
func TestParseOAuthIssuers(t *testing.T) {
	const file = `{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"oauthIssuers": {"https://as.example/realm": {"keyTTL": "15m"}, "https://b.example": {}}}}`
	cfg, err := Parse([]byte(file), env())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]IssuerOptions{"https://as.example/realm": {KeyTTL: KeyTTL(15 * time.Minute)}, "https://b.example": {}}
	if !reflect.DeepEqual(cfg.OAuthIssuers, want) {
		t.Errorf("OAuthIssuers = %v", cfg.OAuthIssuers)
	}
	base, _ := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}}`), env())
	if c := Diff(base, cfg); len(c.Unchanged) != 1 {
		t.Errorf("Diff = %+v", c)
	}
}

func TestExpand(t *testing.T) {
	look := env("A", "1", "EMPTY", "")
	for in, want := range map[string]string{
		"x${A}y": "x1y", "${A}${A}": "11", "${B:-d}": "d", "${EMPTY:-d}": "d", "${EMPTY}": "", "no refs $A": "no refs $A",
	} {
		if got, err := expand(in, look); err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${B}", "${", "${1X}", "${A-}"} {
		if _, err := expand(in, look); err == nil {
			t.Errorf("expand(%q): no error", in)
		}
	}
}

func TestToolFilter(t *testing.T) {
	f := &ToolFilter{Allow: []string{"memo_*", "search"}, Deny: []string{"memo_del*"}}
	for name, want := range map[string]bool{"memo_add": true, "search": true, "memo_delete": false, "other": false} {
		if f.Allowed(name) != want {
			t.Errorf("Allowed(%q) = %v", name, !want)
		}
	}
	deny := &ToolFilter{Deny: []string{"x"}}
	if !deny.Allowed("y") || deny.Allowed("x") || !(*ToolFilter)(nil).Allowed("x") {
		t.Error("empty allow must allow everything not denied")
	}
}

func TestDiff(t *testing.T) {
	parse := func(s string) *Config {
		c, err := Parse([]byte(s), env())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := parse(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}, "d": {"command": "d"}}}`)
	new := parse(`{"mcpServers": {"a": {"command": "x", "timeout": 5}, "b": {"command": "y", "args": ["1"]}, "d": {"command": "d", "disabled": true}, "e": {"url": "http://h/mcp"}},
		"mcpBridge": {"listen": "127.0.0.1:1"}}`)
	got := Diff(old, new)
	want := Changes{Added: []string{"e"}, Removed: []string{"c", "d"}, Changed: []string{"b"}, Unchanged: []string{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v\nwant %+v", got, want)
	}
	// The limits every server gets restart them all; options one server's.
	lim := parse(`{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"maxInflight": 3}}`)
	opt := parse(`{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"tools": {"deny": ["t"]}}}}}`)
	base := parse(`{"mcpServers": {"a": {"command": "x"}}}`)
	if c := Diff(base, lim); len(c.Changed) != 1 {
		t.Errorf("limits: %+v", c)
	}
	if c := Diff(base, opt); len(c.Changed) != 1 {
		t.Errorf("options: %+v", c)
	}
	// The aggregate's own settings restart no server.
	join := parse(`{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"aggregate": true, "joinTimeout": "1s"}}`)
	if c := Diff(base, join); len(c.Changed) != 0 {
		t.Errorf("joinTimeout: %+v", c)
	}
}

// A server's childStartTimeout is its own start timeout.
func TestParseChildStartTimeout(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "mcpBridge": {"servers": {"a": {"childStartTimeout": "2m"}}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(cfg.Servers["a"].Options.ChildStartTimeout); got != 2*time.Minute {
		t.Fatalf("childStartTimeout = %v", got)
	}
}
