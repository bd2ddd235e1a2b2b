package teamconfig

import (
	"strings"
	"testing"
)

// "prefix": false is read beside the tools filter; a bare tool name the
// allow lists show another server exposing too is refused at load, naming
// both servers.
func TestParsePrefix(t *testing.T) {
	file := func(bridge string) string {
		return `{"mcpServers": {"app": {"command": "a"}, "notes": {"command": "n"}, "other": {"command": "o"}, "off": {"command": "x", "disabled": true}},
  "mcpBridge": {` + bridge + `}}`
	}
	cfg, err := Parse([]byte(file(`"servers": {"app": {"prefix": false, "tools": {"allow": ["show", "notes_x"], "deny": ["notes_*"]}}, "notes": {"prefix": true}}`)), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers["app"].Options.Prefixed() || !cfg.Servers["notes"].Options.Prefixed() || !cfg.Servers["other"].Options.Prefixed() {
		t.Errorf("prefixed: app %v, notes %v, other %v", cfg.Servers["app"].Options.Prefixed(), cfg.Servers["notes"].Options.Prefixed(), cfg.Servers["other"].Options.Prefixed())
	}
	for _, tc := range []struct{ name, bridge, want string }{
		{"under another's prefix", `"servers": {"app": {"prefix": false, "tools": {"allow": ["show", "notes_list"]}}}`,
			`mcpBridge.servers.app: "prefix": false exposes the tool "notes_list" bare, a name under the prefix of server "notes"`},
		{"under another's prefix, separator", `"separator": "__", "servers": {"app": {"prefix": false, "tools": {"allow": ["notes__list"]}}}`,
			`a name under the prefix of server "notes" (notes__…)`},
		{"two bare", `"servers": {"app": {"prefix": false, "tools": {"allow": ["show"]}}, "other": {"prefix": false, "tools": {"allow": ["show", "hide"]}}}`,
			`mcpBridge.servers.app: "prefix": false exposes the tool "show" bare, and so does server "other"`},
		{"not a bool", `"servers": {"app": {"prefix": "no"}}`, `prefix`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(file(tc.bridge)), env())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// What the file does not show is left to run time: globs, a server
	// without an allow list, a disabled server, the default separator's
	// prefix under another separator.
	for _, ok := range []string{
		`"servers": {"app": {"prefix": false, "tools": {"allow": ["notes*"]}}, "other": {"prefix": false}}`,
		`"servers": {"app": {"prefix": false, "tools": {"allow": ["off_x"]}}}`,
		`"separator": "__", "servers": {"app": {"prefix": false, "tools": {"allow": ["notes_x"]}}}`,
	} {
		if _, err := Parse([]byte(file(ok)), env()); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
