package exec

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzToolsFile: any bytes as a tools file either load into tools whose
// every part is consistent or are refused; nothing panics.
func FuzzToolsFile(f *testing.F) {
	f.Add([]byte(`{"tools": {"git_log": {"command": "git", "args": ["log", "-n", "{count}", "--", "{paths}"],
	  "inputSchema": {"type": "object", "properties": {"count": {"type": "integer", "maximum": 100}, "paths": {"type": "array", "items": {"type": "string", "pattern": "^[^-]"}}}, "required": ["count"]},
	  "timeout": "30s", "maxOutput": "1MiB", "env": {"GIT_PAGER": "cat", "H": "${HOME:-/}"}, "annotations": {"readOnlyHint": true}}}}`))
	f.Add([]byte(`{"tools": {"a": {"command": "sh", "allowInterpreter": true, "args": ["{{x}}", "--n={n}"], "inputSchema": {"type": "object", "properties": {"n": {"type": ["integer", "null"], "enum": [1, 2]}}, "additionalProperties": {"type": "string"}}}}}`))
	f.Add([]byte(`{"tools": {"b": {"command": "x", "inputSchema": {"type": "object", "properties": {"o": {"type": "object", "properties": {"p": {"type": "array", "items": {"type": "object"}}}}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := fakeLoader().parse(data)
		if err != nil {
			return
		}
		for _, tool := range ts.List {
			if tool.schema == nil || tool.slots == nil || tool.Env == nil || !json.Valid(tool.InputSchema) {
				t.Fatalf("tool %q loaded incomplete", tool.Name)
			}
			for _, kv := range tool.Env {
				if strings.HasPrefix(strings.ToUpper(kv), "MCP_BRIDGE_") && strings.Contains(kv, "tok") {
					t.Fatalf("bridge variable reached a tool's environment: %q", kv)
				}
			}
		}
	})
}

// FuzzArgv: for any template and any arguments the schema accepts, argv
// holds each value as given (one element per value), never an element
// starting with '-' from a value unless allowed, and never a NUL.
func FuzzArgv(f *testing.F) {
	f.Add("{a}", `{"a": "; rm -rf /"}`)
	f.Add("--x={a}", `{"a": "$(id)"}`)
	f.Add("{list}", `{"list": ["-rf", "b"]}`)
	f.Add("{{{a}}}", `{"a": "x\u0000y"}`)
	f.Add("{n}", `{"n": -5}`)
	f.Fuzz(func(t *testing.T, tmpl, args string) {
		at, err := parseArgTemplate(tmpl)
		if err != nil {
			return
		}
		var v map[string]any
		if decodeStrict([]byte(args), &v) != nil {
			return
		}
		argv, err := buildArgv([]argTemplate{at}, v, nil)
		if err != nil {
			return
		}
		if at.slot {
			val, ok := v[at.parts[0].param]
			if !ok && len(argv) != 0 {
				t.Fatalf("absent parameter gave %q", argv)
			}
			if list, isList := val.([]any); isList && len(argv) != len(list) {
				t.Fatalf("array of %d gave %d elements", len(list), len(argv))
			}
		} else if len(argv) > 1 {
			t.Fatalf("template %q gave %d elements", tmpl, len(argv))
		}
		for _, a := range argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("NUL in %q", a)
			}
			if at.slot && strings.HasPrefix(a, "-") {
				t.Fatalf("dash value %q in a slot", a)
			}
		}
	})
}
