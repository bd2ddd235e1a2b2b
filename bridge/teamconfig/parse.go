package teamconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"

	"reflect"
	"slices"
	"strings"
)

// maxFile bounds the configuration file.
const maxFile = 4 << 20

// Load reads and parses the file at name, expanding ${VAR} from the
// process environment.
func Load(name string) (*Config, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("teamconfig: %w", err)
	}
	return Parse(data, os.LookupEnv)
}

// Parse parses a configuration file; lookup resolves ${VAR} references
// (os.LookupEnv in the bridge).
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if len(data) > maxFile {
		return nil, fmt.Errorf("%w: the file is larger than %d bytes", ErrConfig, maxFile)
	}
	p := parser{data: data, lookup: lookup}
	return p.parse()
}

type parser struct {
	data   []byte
	lookup func(string) (string, bool)
}

// entry is one member of a JSON object, with the offset of its value.
type entry struct {
	key string
	off int64
	val json.RawMessage
}

// errorf reports an error at a byte offset of the file as line:column.
func (p *parser) errorf(off int64, format string, args ...any) error {
	line, col := 1, 1
	for _, c := range p.data[:min(max(off, 0), int64(len(p.data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%w: line %d, column %d: %s", ErrConfig, line, col, fmt.Sprintf(format, args...))
}

// jsonErr places an encoding/json error inside the value at base.
func (p *parser) jsonErr(base int64, what string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return p.errorf(base+se.Offset, "%s: %v", what, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "value"
		}
		return p.errorf(base+te.Offset, "%s: %s must be a JSON %s, not %s", what, field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return p.errorf(base, "%s: %v", what, err)
}

func jsonKind(k string) string {
	switch k {
	case "slice":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	case "int", "int64":
		return "integer"
	case "bool":
		return "boolean"
	}
	return k
}

// object splits the JSON object at base into its members, refusing
// duplicate keys (encoding/json would keep the last one silently).
func (p *parser) object(raw []byte, base int64, what string) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, p.jsonErr(base, what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, p.errorf(base, "%s must be a JSON object", what)
	}
	var out []entry
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.jsonErr(base, what, err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, p.jsonErr(base, what, err)
		}
		// The value's offset: where it ends minus its length.
		off := base + dec.InputOffset() - int64(len(val))
		if seen[key] {
			return nil, p.errorf(off, "%s: %q appears twice", what, key)
		}
		seen[key] = true
		out = append(out, entry{key, off, val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, p.jsonErr(base, what, err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, p.errorf(base+dec.InputOffset(), "%s: data after the object", what)
	}
	return out, nil
}

func (p *parser) parse() (*Config, error) {
	top, err := p.object(p.data, 0, "the file")
	if err != nil {
		return nil, err
	}
	cfg := &Config{Servers: map[string]*Server{}}
	var servers, bridge *entry
	for i := range top {
		e := &top[i]
		switch e.key {
		case "mcpServers", "servers": // "servers": VS Code's .vscode/mcp.json
			if servers != nil {
				return nil, p.errorf(e.off, "both %q and %q: use one", servers.key, e.key)
			}
			servers = e
		case "mcpBridge":
			bridge = e
		}
		// Other top-level keys (VS Code's "inputs", a host's own settings)
		// are the host's business.
	}
	if servers == nil {
		return nil, p.errorf(0, `no "mcpServers" object`)
	}
	entries, err := p.object(servers.val, servers.off, servers.key)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		s, err := p.server(e)
		if err != nil {
			return nil, err
		}
		cfg.Servers[s.Name] = s
	}
	if bridge != nil {
		if err := p.bridge(bridge, cfg); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// hostEntry is what the bridge reads of a host's server entry; every other
// key is tolerated.
type hostEntry struct {
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Type     string            `json:"type"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
	OAuth    json.RawMessage   `json:"oauth"`
}

func (p *parser) server(e entry) (*Server, error) {
	what := "mcpServers." + e.key
	if !ValidName(e.key) {
		return nil, p.errorf(e.off, "server name %q: use 1-64 letters, digits, '-' or '_' (it is a URL path segment)", e.key)
	}
	var h hostEntry
	if err := json.Unmarshal(e.val, &h); err != nil {
		return nil, p.jsonErr(e.off, what, err)
	}
	s := &Server{Name: e.key, Disabled: h.Disabled}
	switch t := strings.ToLower(h.Type); t {
	case "", "stdio", "http", "streamable-http", "streamablehttp":
		if t == "stdio" && h.Command == "" {
			return nil, p.errorf(e.off, `%s: type "stdio" needs a "command"`, what)
		}
		if (t == "http" || t == "streamable-http" || t == "streamablehttp") && h.URL == "" {
			return nil, p.errorf(e.off, `%s: type %q needs a "url"`, what, h.Type)
		}
	case "sse":
		// The legacy HTTP+SSE transport (2024-11-05): url is the SSE URL.
		if h.URL == "" {
			return nil, p.errorf(e.off, `%s: type "sse" needs a "url" (the server's SSE URL)`, what)
		}
		s.SSE = true
	default:
		return nil, p.errorf(e.off, `%s: unknown type %q (want "stdio", "http" or "sse")`, what, h.Type)
	}
	switch {
	case h.Command != "" && h.URL != "":
		return nil, p.errorf(e.off, `%s: has both "command" and "url"; a server is one or the other`, what)
	case h.Command == "" && h.URL == "":
		return nil, p.errorf(e.off, `%s: needs a "command" (stdio) or a "url" (remote)`, what)
	case h.URL != "" && (len(h.Args) > 0 || len(h.Env) > 0 || h.Cwd != ""):
		return nil, p.errorf(e.off, `%s: "args", "env" and "cwd" belong to stdio servers, not to a "url" entry`, what)
	case h.Command != "" && len(h.Headers) > 0:
		return nil, p.errorf(e.off, `%s: "headers" belong to a "url" entry, not to a stdio command`, what)
	}
	if s.Disabled {
		// Kept unexpanded: a disabled entry may name variables this
		// environment lacks.
		s.Command, s.URL = h.Command, h.URL
		if len(h.OAuth) > 0 {
			var err error
			if s.OAuth, err = p.oauth(h.OAuth, e.off+int64(bytes.Index(e.val, h.OAuth)), what+".oauth", s); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	x := func(field, v string) (string, error) {
		out, err := expand(v, p.lookup)
		if err != nil {
			return "", p.errorf(e.off, "%s: %s: %v", what, field, err)
		}
		return out, nil
	}
	// What reaches a stdio child's argv, environment or cwd.
	xc := func(field, v string) (string, error) {
		out, err := expandForChild(v, p.lookup)
		if err != nil {
			return "", p.errorf(e.off, "%s: %s: %v", what, field, err)
		}
		return out, nil
	}
	var err error
	if s.Command, err = xc("command", h.Command); err != nil {
		return nil, err
	}
	if s.Cwd, err = xc("cwd", h.Cwd); err != nil {
		return nil, err
	}
	if s.URL, err = x("url", h.URL); err != nil {
		return nil, err
	}
	// "${CMD:-}" with CMD unset expands to nothing: an entry that was a
	// command or a url before expansion must still be one after it.
	if h.Command != "" && s.Command == "" {
		return nil, p.errorf(e.off, "%s: command %q expands to an empty string", what, h.Command)
	}
	if h.URL != "" && s.URL == "" {
		return nil, p.errorf(e.off, "%s: url %q expands to an empty string", what, h.URL)
	}
	if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		return nil, p.errorf(e.off, "%s: url must start with http:// or https://", what)
	}
	for i, a := range h.Args {
		v, err := xc(fmt.Sprintf("args[%d]", i), a)
		if err != nil {
			return nil, err
		}
		s.Args = append(s.Args, v)
	}
	if s.Env, err = expandMap(h.Env, "env", xc); err != nil {
		return nil, err
	}
	if s.Headers, err = expandMap(h.Headers, "headers", x); err != nil {
		return nil, err
	}
	if len(h.OAuth) > 0 {
		if s.OAuth, err = p.oauth(h.OAuth, e.off+int64(bytes.Index(e.val, h.OAuth)), what+".oauth", s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func expandMap(m map[string]string, field string, x func(string, string) (string, error)) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		v, err := x(field+"."+k, m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// bridgeSection is "mcpBridge": unknown keys are errors.
type bridgeSection struct {
	Bridge
	Servers      json.RawMessage `json:"servers"`
	OAuthIssuers json.RawMessage `json:"oauthIssuers"`
}

func (p *parser) bridge(e *entry, cfg *Config) error {
	var b bridgeSection
	if err := p.strictDecode(e.val, e.off, "mcpBridge", &b); err != nil {
		return err
	}
	cfg.Bridge = b.Bridge
	if b.Separator != "" && strings.ContainsAny(b.Separator, "/ \t\r\n") {
		return p.errorf(e.off, "mcpBridge.separator %q: no '/' or white space", b.Separator)
	}
	for what, v := range map[string]int64{"maxBody": b.MaxBody, "maxMessageSize": int64(b.MaxMessageSize), "maxInflight": int64(b.MaxInflight), "maxSessions": int64(b.MaxSessions)} {
		if v < 0 {
			return p.errorf(e.off, "mcpBridge.%s must not be negative", what)
		}
	}
	if err := p.issuers(e, b.OAuthIssuers, cfg); err != nil {
		return err
	}
	if len(b.Servers) == 0 {
		return nil
	}
	base := e.off + int64(bytes.Index(e.val, b.Servers))
	entries, err := p.object(b.Servers, base, "mcpBridge.servers")
	if err != nil {
		return err
	}
	offs := map[string]int64{}
	for _, se := range entries {
		what := "mcpBridge.servers." + se.key
		offs[se.key] = se.off
		s, ok := cfg.Servers[se.key]
		if !ok {
			return p.errorf(se.off, "%s: no server of that name in mcpServers (known: %s)", what, strings.Join(slices.Sorted(maps.Keys(cfg.Servers)), ", "))
		}
		var sec optionsSection
		if err := p.strictDecode(se.val, se.off, what, &sec); err != nil {
			return err
		}
		s.Options = sec.Options
		if len(sec.OAuth) > 0 {
			if s.OAuth != nil {
				return p.errorf(se.off, "%s.oauth: mcpServers.%s has its own \"oauth\"; keep one of them", what, se.key)
			}
			o, err := p.oauth(sec.OAuth, se.off+int64(bytes.Index(se.val, sec.OAuth)), what+".oauth", s)
			if err != nil {
				return err
			}
			s.OAuth = o
		}
		if err := p.checkOptions(se.off, what, &s.Options); err != nil {
			return err
		}
	}
	return p.checkPrefixes(cfg, offs)
}

// optionsSection is one "mcpBridge.servers.<name>" object: the Options
// and an "oauth" that belongs to the Server (as the entry's own would).
type optionsSection struct {
	Options
	OAuth json.RawMessage `json:"oauth"`
}

// issuers parses "mcpBridge.oauthIssuers": an object of issuer URLs,
// each with its IssuerOptions (unknown keys are errors).
func (p *parser) issuers(e *entry, raw json.RawMessage, cfg *Config) error {
	if len(raw) == 0 {
		return nil
	}
	base := e.off + int64(bytes.Index(e.val, raw))
	entries, err := p.object(raw, base, "mcpBridge.oauthIssuers")
	if err != nil {
		return err
	}
	cfg.OAuthIssuers = map[string]IssuerOptions{}
	for _, ie := range entries {
		what := "mcpBridge.oauthIssuers." + ie.key
		if !strings.HasPrefix(ie.key, "https://") && !strings.HasPrefix(ie.key, "http://") {
			return p.errorf(ie.off, "%s: the key is an issuer URL, as given to --oauth-issuer", what)
		}
		var o IssuerOptions
		if err := p.strictDecode(ie.val, ie.off, what, &o); err != nil {
			return err
		}
		cfg.OAuthIssuers[ie.key] = o
	}
	return nil
}

func (p *parser) checkOptions(off int64, what string, o *Options) error {
	oneOf := func(field, v string, ok ...string) error {
		if v != "" && !slices.Contains(ok, v) {
			return p.errorf(off, "%s.%s %q: want one of %s", what, field, v, strings.Join(ok, ", "))
		}
		return nil
	}
	if err := oneOf("sessionMode", o.SessionMode, "auto", "per-session", "shared"); err != nil {
		return err
	}
	if err := oneOf("childProtocol", o.ChildProtocol, "auto", "modern", "legacy"); err != nil {
		return err
	}
	if err := oneOf("childPer", o.ChildPer, "shared", "principal"); err != nil {
		return err
	}
	if o.Tools != nil {
		if err := o.Tools.Check(); err != nil {
			return p.errorf(off, "%s.tools: %v", what, err)
		}
	}
	return nil
}

// strictDecode decodes the JSON object at off into v, a pointer to a
// struct, refusing keys that are not exactly one of its fields' JSON names
// (encoding/json alone would match "maxbody" to maxBody and ignore
// "maxBodySize").
func (p *parser) strictDecode(raw []byte, off int64, what string, v any) error {
	entries, err := p.object(raw, off, what)
	if err != nil {
		return err
	}
	known := jsonNames(reflect.TypeOf(v).Elem())
	for _, e := range entries {
		if !slices.Contains(known, e.key) {
			return p.errorf(e.off, "%s: unknown field %q (known: %s)", what, e.key, strings.Join(known, ", "))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return p.jsonErr(off, what, err)
	}
	return nil
}

// jsonNames lists the JSON names of a struct's fields, embedded ones'
// included.
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
