package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// ErrToolsFile wraps every reason a tools file is refused.
var ErrToolsFile = errors.New("exec: tools file")

// Defaults and limits of a tool's settings (docs/exec.md).
const (
	defaultTimeout     = 60 * time.Second
	maxTimeout         = 24 * time.Hour
	defaultMaxOutput   = 1 << 20
	maxMaxOutput       = 4 << 20 // each stream; a result carries it twice (text and structuredContent)
	defaultConcurrency = 4
	maxConcurrency     = 64
	maxTools           = 1000
	maxArgs            = 1000
)

// A Tool is one program of the tools file, checked and resolved.
type Tool struct {
	Name        string
	Title       string
	Description string
	// Command is the program's absolute path, resolved when the file was
	// loaded: a later change of PATH or of the working directory cannot
	// swap it.
	Command     string
	Args        []string // the templates as written
	templates   []argTemplate
	InputSchema json.RawMessage
	schema      *schema
	Annotations json.RawMessage
	Timeout     time.Duration
	// Grace is how long the program gets between SIGTERM and SIGKILL.
	Grace       time.Duration
	MaxOutput   int
	Cwd         string
	Env         []string // NAME=value, the program's whole environment
	Concurrency int
	AllowDashes []string
	Secrets     []string

	slots chan struct{} // Concurrency tokens
}

// Tools are the tools of one file, in name order.
type Tools struct {
	List   []*Tool
	byName map[string]*Tool
}

// Lookup returns the tool called name.
func (ts *Tools) Lookup(name string) (*Tool, bool) {
	t, ok := ts.byName[name]
	return t, ok
}

// fileSpec is the tools file as written.
type fileSpec struct {
	Tools map[string]json.RawMessage `json:"tools"`
}

type toolSpec struct {
	Title            string            `json:"title"`
	Description      string            `json:"description"`
	Command          string            `json:"command"`
	Args             []string          `json:"args"`
	InputSchema      json.RawMessage   `json:"inputSchema"`
	Annotations      json.RawMessage   `json:"annotations"`
	Timeout          string            `json:"timeout"`
	Grace            string            `json:"grace"`
	MaxOutput        json.RawMessage   `json:"maxOutput"`
	Cwd              string            `json:"cwd"`
	Env              map[string]string `json:"env"`
	Concurrency      *int              `json:"concurrency"`
	AllowDashes      []string          `json:"allowDashes"`
	Secrets          []string          `json:"secrets"`
	AllowInterpreter bool              `json:"allowInterpreter"`
}

// A loader carries what resolving a file needs from the system, so that
// the fuzz target can parse without touching it.
type loader struct {
	dir      string // the file's directory: base of relative paths
	lookup   func(string) (string, bool)
	lookPath func(string) (string, error)
	isDir    func(string) bool
}

// Load reads and checks the tools file at path. Environment references
// (${VAR}) in "env" are read from lookup (os.LookupEnv in exec).
func Load(path string, lookup func(string) (string, bool)) (*Tools, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolsFile, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolsFile, err)
	}
	l := loader{
		dir:      filepath.Dir(abs),
		lookup:   lookup,
		lookPath: osexec.LookPath,
		isDir: func(p string) bool {
			st, err := os.Stat(p)
			return err == nil && st.IsDir()
		},
	}
	ts, err := l.parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrToolsFile, path, err)
	}
	return ts, nil
}

func (l loader) parse(data []byte) (*Tools, error) {
	var f fileSpec
	if err := strictUnmarshal(data, &f); err != nil {
		return nil, err
	}
	if len(f.Tools) == 0 {
		return nil, errors.New(`no tools: want {"tools": {"name": {...}}}`)
	}
	if len(f.Tools) > maxTools {
		return nil, fmt.Errorf("more than %d tools", maxTools)
	}
	ts := &Tools{byName: map[string]*Tool{}}
	for name, raw := range f.Tools {
		t, err := l.tool(name, raw)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		ts.List = append(ts.List, t)
		ts.byName[name] = t
	}
	sort.Slice(ts.List, func(i, j int) bool { return ts.List[i].Name < ts.List[j].Name })
	return ts, nil
}

func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// validToolName: MCP tool names are 1 to 128 of [A-Za-z0-9_.-] (2025-11-25
// server/tools §Tool Names: "SHOULD be between 1 and 128 characters").
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (l loader) tool(name string, raw json.RawMessage) (*Tool, error) {
	if !validToolName(name) {
		return nil, errors.New("a tool name is 1 to 128 letters, digits, '_', '-' or '.'")
	}
	var s toolSpec
	if err := strictUnmarshal(raw, &s); err != nil {
		return nil, err
	}
	t := &Tool{Name: name, Title: s.Title, Description: s.Description, Args: s.Args,
		AllowDashes: s.AllowDashes, Secrets: s.Secrets}
	var err error
	if t.Command, err = l.command(s.Command, s.AllowInterpreter); err != nil {
		return nil, err
	}
	if len(s.Args) > maxArgs {
		return nil, fmt.Errorf("more than %d args", maxArgs)
	}

	// The input schema: a JSON object schema in the validator's subset.
	t.InputSchema = s.InputSchema
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	if t.schema, err = compileSchema(t.InputSchema); err != nil {
		return nil, err
	}
	if len(t.schema.types) != 1 || t.schema.types[0] != "object" {
		return nil, errors.New(`inputSchema: "type" must be "object" (MCP tool arguments are an object)`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, t.InputSchema); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	t.InputSchema = compact.Bytes()
	if len(s.Annotations) > 0 {
		var a map[string]any
		if err := json.Unmarshal(s.Annotations, &a); err != nil || a == nil {
			return nil, errors.New("annotations: want an object")
		}
		var ac bytes.Buffer
		json.Compact(&ac, s.Annotations)
		t.Annotations = ac.Bytes()
	}

	for _, a := range s.Args {
		at, err := parseArgTemplate(a)
		if err != nil {
			return nil, fmt.Errorf("args: %w", err)
		}
		for _, p := range at.params() {
			if err := t.checkSlotParam(p, at.slot); err != nil {
				return nil, fmt.Errorf("args: %q: %w", a, err)
			}
		}
		t.templates = append(t.templates, at)
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"allowDashes", s.AllowDashes}, {"secrets", s.Secrets}} {
		for _, p := range list.names {
			if _, ok := t.schema.properties[p]; !ok {
				return nil, fmt.Errorf("%s: %q is not a property of inputSchema", list.key, p)
			}
		}
	}

	if t.Timeout, err = duration(s.Timeout, defaultTimeout); err != nil {
		return nil, fmt.Errorf("timeout: %w", err)
	}
	if t.Grace, err = duration(s.Grace, time.Second); err != nil {
		return nil, fmt.Errorf("grace: %w", err)
	}
	if t.MaxOutput, err = size(s.MaxOutput); err != nil {
		return nil, fmt.Errorf("maxOutput: %w", err)
	}
	t.Concurrency = defaultConcurrency
	if s.Concurrency != nil {
		if *s.Concurrency < 1 || *s.Concurrency > maxConcurrency {
			return nil, fmt.Errorf("concurrency: want 1 to %d", maxConcurrency)
		}
		t.Concurrency = *s.Concurrency
	}
	t.slots = make(chan struct{}, t.Concurrency)
	if t.Cwd, err = l.cwd(s.Cwd); err != nil {
		return nil, err
	}
	if t.Env, err = l.env(s.Env); err != nil {
		return nil, err
	}
	return t, nil
}

// checkSlotParam: a parameter in args must be a declared property whose
// values have a command-line form; an array only in a slot of its own.
func (t *Tool) checkSlotParam(name string, slot bool) error {
	ps, ok := t.schema.properties[name]
	if !ok {
		return fmt.Errorf("{%s} is not a property of inputSchema", name)
	}
	if ps.types == nil {
		return fmt.Errorf("property %q needs a \"type\" to be used as an argument", name)
	}
	for _, typ := range ps.types {
		switch typ {
		case "string", "integer", "number", "boolean":
		case "array":
			if !slot {
				return fmt.Errorf("array property %q can only fill an element of its own (exactly \"{%s}\")", name, name)
			}
			if ps.items == nil || ps.items.types == nil || slices.ContainsFunc(ps.items.types, func(s string) bool {
				return s == "array" || s == "object" || s == "null"
			}) {
				return fmt.Errorf("array property %q needs \"items\" of a scalar \"type\"", name)
			}
		default:
			return fmt.Errorf("property %q of type %s has no command-line form", name, typ)
		}
	}
	return nil
}

// interpreters are programs that run code or other programs named in their
// arguments: with one of them as command, an argument slot is a command
// line (GHSA-3x77-wg38-92r3: bash allowed → "bash -c <anything>").
var interpreters = []string{
	// shells
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "rbash", "busybox", "toybox",
	"pwsh", "powershell", "cmd", "wsl",
	// language runtimes and their launchers
	"python", "pythonw", "py", "pyw", "pypy", "node", "nodejs", "deno", "bun", "perl", "ruby", "irb",
	"php", "lua", "luajit", "tclsh", "wish", "osascript", "r", "rscript", "julia", "java", "jshell",
	"jrunscript", "groovy", "kotlin", "scala", "dotnet", "go", "racket", "guile", "sbcl", "ghci",
	"runghc", "runhaskell", "elixir", "iex", "erl", "escript", "swift",
	"awk", "gawk", "mawk", "nawk", "wscript", "cscript", "mshta", "rundll32", "regsvr32",
	// package runners that run what they fetch
	"npx", "npm", "pnpm", "yarn", "uv", "uvx", "pipx",
	// command runners: their arguments are another command line
	"env", "xargs", "sudo", "doas", "su", "runuser", "nohup", "timeout", "nice", "ionice", "setsid",
	"stdbuf", "chroot", "nsenter", "unshare", "systemd-run", "script", "expect", "watch", "flock",
	"strace", "ltrace", "gdb", "time", "ssh",
}

// interpreterName normalizes a program's file name: lower case, without a
// Windows extension and a version suffix (python3.12, perl5.38).
func interpreterName(path string) string {
	// Either separator, whatever the platform: a file written for Windows
	// names C:\...\py.exe, and the check must not depend on where it loads.
	base := strings.ToLower(path[strings.LastIndexAny(path, `/\`)+1:])
	for _, ext := range []string{".exe", ".com", ".bat", ".cmd", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	return strings.TrimRight(base, "0123456789.-_")
}

func isInterpreter(path string) bool {
	lower := strings.ToLower(path)
	if strings.HasSuffix(lower, ".bat") || strings.HasSuffix(lower, ".cmd") || strings.HasSuffix(lower, ".ps1") {
		return true // run by cmd.exe or PowerShell
	}
	return slices.Contains(interpreters, interpreterName(path))
}

// command resolves the program to an absolute path now, and refuses an
// interpreter unless the tool says it means one.
func (l loader) command(cmd string, allowInterpreter bool) (string, error) {
	if cmd == "" {
		return "", errors.New(`"command" is required`)
	}
	if strings.ContainsAny(cmd, " \t") && !strings.ContainsAny(cmd, `/\`) {
		return "", fmt.Errorf("command %q: one program, not a command line (arguments go in \"args\")", cmd)
	}
	path := cmd
	if strings.ContainsAny(cmd, `/\`) && !filepath.IsAbs(cmd) {
		path = filepath.Join(l.dir, cmd)
	}
	resolved, err := l.lookPath(path)
	if err != nil {
		return "", fmt.Errorf("command %q: %w", cmd, err)
	}
	if resolved, err = filepath.Abs(resolved); err != nil {
		return "", fmt.Errorf("command %q: %w", cmd, err)
	}
	if !allowInterpreter {
		names := []string{cmd, resolved}
		if real, err := filepath.EvalSymlinks(resolved); err == nil {
			names = append(names, real) // /bin/sh → dash
		}
		for _, n := range names {
			if isInterpreter(n) {
				return "", fmt.Errorf("command %q is an interpreter (%s): its arguments would be code; set \"allowInterpreter\": true for this tool if that is what it is for", cmd, interpreterName(n))
			}
		}
	}
	return resolved, nil
}

func (l loader) cwd(dir string) (string, error) {
	if dir == "" {
		dir = l.dir
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(l.dir, dir)
	}
	if l.isDir != nil && !l.isDir(dir) {
		return "", fmt.Errorf("cwd %q: not a directory", dir)
	}
	return filepath.Clean(dir), nil
}

// env builds the program's whole environment: only what the tool lists.
// ${VAR} reads exec's own environment, except the bridge's variables:
// MCP_BRIDGE_* carry its credentials.
func (l loader) env(spec map[string]string) ([]string, error) {
	names := make([]string, 0, len(spec))
	for k := range spec {
		names = append(names, k)
	}
	sort.Strings(names)
	env := make([]string, 0, len(spec))
	lookup := func(name string) (string, bool) {
		if bridgeVar(name) {
			return "", false
		}
		if l.lookup == nil {
			return "", false
		}
		return l.lookup(name)
	}
	for _, name := range names {
		if !validEnvName(name) {
			return nil, fmt.Errorf("env: %q is not a variable name", name)
		}
		if ref := bridgeRef(spec[name]); ref != "" {
			return nil, fmt.Errorf("env %s: ${%s} is the bridge's own setting and may hold a credential; it is never passed to a tool", name, ref)
		}
		v, err := teamconfig.Expand(spec[name], lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", name, err)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("env %s: contains a NUL character", name)
		}
		env = append(env, name+"="+v)
	}
	return env, nil
}

func bridgeVar(name string) bool { return strings.HasPrefix(strings.ToUpper(name), "MCP_BRIDGE_") }

// bridgeRef returns the first ${MCP_BRIDGE_...} reference in s.
func bridgeRef(s string) string {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return ""
		}
		s = s[i+2:]
		end := strings.IndexAny(s, ":}")
		if end < 0 {
			return ""
		}
		if bridgeVar(s[:end]) {
			return s[:end]
		}
	}
}

func validEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf("%q: want a duration such as 30s or 5m, at most %v", s, maxTimeout)
	}
	return d, nil
}

// size reads maxOutput: a byte count, or a string with a unit (KiB, MiB;
// k and M mean the same).
func size(raw json.RawMessage) (int, error) {
	if len(raw) == 0 {
		return defaultMaxOutput, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, errors.New("want a byte count or a size such as \"1MiB\"")
		}
		mult := int64(1)
		for _, u := range []struct {
			suffix string
			mult   int64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"k", 1 << 10}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
			if strings.HasSuffix(s, u.suffix) {
				s, mult = strings.TrimSuffix(s, u.suffix), u.mult
				break
			}
		}
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s: want a byte count or a size such as \"1MiB\"", raw)
		}
		n = v * mult
	}
	if n <= 0 || n > maxMaxOutput {
		return 0, fmt.Errorf("want 1 byte to %d MiB", maxMaxOutput>>20)
	}
	return int(n), nil
}
