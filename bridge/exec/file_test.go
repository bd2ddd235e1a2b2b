package exec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeLoader resolves every command to /bin/<name> without touching the
// system (the fuzz target uses it too).
func fakeLoader() loader {
	return loader{
		dir: "/tools",
		lookup: func(k string) (string, bool) {
			return map[string]string{"HOME": "/home/u", "MCP_BRIDGE_AUTH_TOKEN": "tok"}[k], k == "HOME" || k == "MCP_BRIDGE_AUTH_TOKEN"
		},
		lookPath: func(p string) (string, error) {
			if strings.Contains(p, "missing") {
				return "", errors.New("not found")
			}
			if filepath.IsAbs(p) {
				return p, nil
			}
			return "/bin/" + p, nil
		},
	}
}

// What a tools file may not say is refused when it loads, with the reason.
func TestLoadRefusals(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{`{"command": "sh", "args": ["-c", "{cmd}"], "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}`, "is an interpreter"},
		{`{"command": "/usr/bin/python3.12"}`, "is an interpreter"},
		{`{"command": "bash.exe"}`, "is an interpreter"},
		{`{"command": "env"}`, "is an interpreter"},
		{`{"command": "C:\\Windows\\py.exe"}`, "is an interpreter"},
		{`{"command": "pythonw"}`, "is an interpreter"},
		{`{"command": "npx"}`, "is an interpreter"},
		{`{"command": "/usr/lib/jvm/bin/java"}`, "is an interpreter"},
		{`{"command": "wscript.exe"}`, "is an interpreter"},
		{`{"command": "C:\\tools\\run.bat"}`, "is an interpreter"},
		{`{"command": "git log"}`, "one program, not a command line"},
		{`{"command": "missing-tool"}`, "not found"},
		{`{"command": ""}`, `"command" is required`},
		{`{"command": "git", "args": ["{path}"]}`, "{path} is not a property of inputSchema"},
		{`{"command": "git", "args": ["{p"], "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}}`, "unclosed '{'"},
		{`{"command": "git", "args": ["a}b"]}`, "stray '}'"},
		{`{"command": "git", "args": ["{a b}"]}`, "not a parameter reference"},
		{`{"command": "git", "args": ["--x={list}"], "inputSchema": {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string"}}}}}`, "can only fill an element of its own"},
		{`{"command": "git", "args": ["{list}"], "inputSchema": {"type": "object", "properties": {"list": {"type": "array"}}}}`, "needs \"items\" of a scalar"},
		{`{"command": "git", "args": ["{o}"], "inputSchema": {"type": "object", "properties": {"o": {"type": "object"}}}}`, "has no command-line form"},
		{`{"command": "git", "args": ["{u}"], "inputSchema": {"type": "object", "properties": {"u": {}}}}`, "needs a \"type\""},
		{`{"command": "git", "inputSchema": {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}}`, "inputSchema.properties.a.oneOf: keyword not supported"},
		{`{"command": "git", "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}}`, "format: keyword not supported"},
		{`{"command": "git", "inputSchema": {"type": "object", "$ref": "#/x"}}`, "$ref: keyword not supported"},
		{`{"command": "git", "inputSchema": {"type": "array"}}`, `"type" must be "object"`},
		{`{"command": "git", "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}}`, "pattern"},
		{`{"command": "git", "inputSchema": {"type": "object", "properties": {"a": {"type": "strin"}}}}`, `unknown type "strin"`},
		{`{"command": "git", "allowDashes": ["nope"]}`, `allowDashes: "nope" is not a property`},
		{`{"command": "git", "secrets": ["nope"]}`, `secrets: "nope" is not a property`},
		{`{"command": "git", "env": {"TOKEN": "${MCP_BRIDGE_AUTH_TOKEN}"}}`, "is the bridge's own setting"},
		{`{"command": "git", "env": {"T": "x${mcp_bridge_bearer_token:-y}"}}`, "is the bridge's own setting"},
		{`{"command": "git", "env": {"X": "${UNSET_VAR}"}}`, "UNSET_VAR is not set"},
		{`{"command": "git", "env": {"BAD NAME": "x"}}`, "not a variable name"},
		{`{"command": "git", "timeout": "forever"}`, "timeout"},
		{`{"command": "git", "timeout": "-1s"}`, "timeout"},
		{`{"command": "git", "maxOutput": "1GiB"}`, "maxOutput"},
		{`{"command": "git", "maxOutput": 0}`, "maxOutput"},
		{`{"command": "git", "concurrency": 0}`, "concurrency"},
		{`{"command": "git", "shell": true}`, `unknown field "shell"`},
		{`{"command": "git", "annotations": [1]}`, "annotations: want an object"},
	} {
		_, err := fakeLoader().parse([]byte(`{"tools": {"t": ` + tc.tool + `}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.tool, err, tc.want)
		}
	}
	for _, file := range []string{`{}`, `{"tools": {}}`, `{"tools": {"bad name": {"command": "git"}}}`, `{"tools": {"t": {"command": "git"}}} x`} {
		if _, err := fakeLoader().parse([]byte(file)); err == nil {
			t.Errorf("%s: loaded", file)
		}
	}
}

// What a tools file may say: an interpreter it declares, the defaults,
// relative paths against the file's directory.
func TestLoadAccepts(t *testing.T) {
	ts, err := fakeLoader().parse([]byte(`{"tools": {
	  "py": {"command": "python3", "allowInterpreter": true, "args": ["/srv/report.py", "{{\"raw\"}}"]},
	  "rel": {"command": "./bin/tool", "cwd": "work", "timeout": "5m", "maxOutput": "256KiB", "concurrency": 2, "env": {"HOME": "${HOME}", "LANG": "C.UTF-8"}},
	  "plain": {"command": "git", "maxOutput": 1000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	py, _ := ts.Lookup("py")
	if py.Command != "/bin/python3" || py.Timeout.String() != "1m0s" || py.MaxOutput != 1<<20 || py.Concurrency != 4 || py.Cwd != "/tools" || len(py.Env) != 0 || py.Env == nil {
		t.Errorf("defaults: %+v", py)
	}
	rel, _ := ts.Lookup("rel")
	if rel.Command != filepath.Clean("/tools/bin/tool") || rel.Cwd != filepath.Clean("/tools/work") || rel.MaxOutput != 256<<10 || rel.Timeout.Minutes() != 5 ||
		strings.Join(rel.Env, ",") != "HOME=/home/u,LANG=C.UTF-8" {
		t.Errorf("rel: %+v", rel)
	}
	if ts.List[0].Name != "plain" || ts.List[2].Name != "rel" {
		t.Error("tools not in name order")
	}
	argv, err := buildArgv(py.templates, nil, nil)
	if err != nil || strings.Join(argv, "|") != `/srv/report.py|{"raw"}` {
		t.Errorf("literal braces: %q %v", argv, err)
	}
}

// The real loader resolves a bare name on PATH to an absolute path, and a
// symlink to an interpreter is an interpreter (/bin/sh → dash).
func TestLoadResolvesCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "innocent")
	if err := os.Symlink("/bin/sh", link); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tools.json")
	q, _ := json.Marshal(link)
	os.WriteFile(path, []byte(`{"tools": {"t": {"command": `+string(q)+`}}}`), 0o600)
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "interpreter") {
		t.Errorf("a symlink to /bin/sh: %v", err)
	}
	t.Setenv("PATH", filepath.Dir(probe))
	os.WriteFile(path, []byte(`{"tools": {"t": {"command": "`+filepath.Base(probe)+`"}}}`), 0o600)
	ts, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts.List[0].Command != probe {
		t.Errorf("resolved %q, want %q", ts.List[0].Command, probe)
	}
}
