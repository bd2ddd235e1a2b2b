package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// The host snippets are what users paste; a token in a bridge's argv is
// readable by every local user in a process listing, so the snippets keep
// secrets in env (or in the host's own header/token settings) and say so.

const hostsDir = "../../examples/hosts"

// A value that stands for a secret without being one: the snippets' placeholder
// or a reference the host or the bridge expands from the environment.
var placeholder = regexp.MustCompile(`^(Bearer )?(replace-me|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$\{input:[A-Za-z0-9_-]+\})$`)

// Long runs of token alphabet with both letters and digits, as API keys and
// JWT segments are; URLs and paths are checked before this is applied.
var tokenish = regexp.MustCompile(`[A-Za-z0-9_\-]{20,}`)

func looksLikeToken(s string) bool {
	for _, m := range tokenish.FindAllString(s, -1) {
		if strings.ContainsAny(m, "0123456789") && strings.IndexFunc(m, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0 {
			return true
		}
	}
	return false
}

// hostServer is one server entry in any host's format.
type hostServer struct {
	Type                 string            `json:"type"`
	Command              string            `json:"command"`
	Args                 []string          `json:"args"`
	Env                  map[string]string `json:"env"`
	URL                  string            `json:"url"`
	HTTPURL              string            `json:"httpUrl"`
	Headers              map[string]string `json:"headers"`
	EnvVars              []string          `json:"-"`
	BearerTokenEnvVar    string            `json:"-"`
	InlineBearerTokenSet bool              `json:"-"`
}

func checkServer(s hostServer) error {
	if s.Command != "" {
		if len(s.Args) < 2 || s.Args[0] != "connect" {
			return fmt.Errorf("args %q: want connect URL ...", s.Args)
		}
		if s.Args[1] == "--config" {
			// connect --config FILE: the remotes, their URLs and
			// headers are in the file (checked by checkBridgeFile).
			if len(s.Args) != 3 || s.Args[2] == "" {
				return fmt.Errorf("args %q: want connect --config FILE, and nothing else", s.Args)
			}
		} else if err := httpURL(s.Args[1]); err != nil {
			return fmt.Errorf("args %q: %w", s.Args, err)
		}
		for i, a := range s.Args {
			if strings.HasPrefix(a, "--bearer-token") || strings.HasPrefix(a, "--auth-token") {
				return fmt.Errorf("args %q: a token flag on the command line", s.Args)
			}
			if i < 2 {
				continue
			}
			if prev := s.Args[i-1]; prev == "-H" || prev == "--header" {
				_, v, _ := strings.Cut(a, ":")
				if !placeholder.MatchString(strings.TrimSpace(v)) {
					return fmt.Errorf("args %q: a header value that is not a ${VAR} reference", s.Args)
				}
			}
			if looksLikeToken(a) {
				return fmt.Errorf("args %q: a token-looking value", s.Args)
			}
		}
	} else {
		u := s.URL
		if s.HTTPURL != "" {
			u = s.HTTPURL
		}
		if u == "" {
			return fmt.Errorf("neither command nor url")
		}
		if s.Type != "" && s.Type != "http" {
			return fmt.Errorf("type %q: the serve form is Streamable HTTP", s.Type)
		}
		if err := httpURL(u); err != nil {
			return err
		}
	}
	if s.InlineBearerTokenSet {
		return fmt.Errorf("bearer_token in the file; use bearer_token_env_var")
	}
	for k, v := range s.Env {
		if !placeholder.MatchString(v) {
			return fmt.Errorf("env %s=%q: not a placeholder or a ${VAR} reference", k, v)
		}
	}
	for k, v := range s.Headers {
		if !placeholder.MatchString(v) && looksLikeToken(v) {
			return fmt.Errorf("header %s=%q: a token-looking value", k, v)
		}
		if strings.HasPrefix(v, "Bearer ") && !placeholder.MatchString(v) {
			return fmt.Errorf("header %s=%q: not a placeholder or a ${VAR} reference", k, v)
		}
	}
	return nil
}

func httpURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

func jsonServers(b []byte) (map[string]hostServer, error) {
	var doc struct {
		MCPServers map[string]hostServer `json:"mcpServers"`
		Servers    map[string]hostServer `json:"servers"` // VS Code
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string]hostServer{}
	for k, v := range doc.MCPServers {
		out[k] = v
	}
	for k, v := range doc.Servers {
		out[k] = v
	}
	return out, nil
}

// tomlServers reads the [mcp_servers.NAME] tables of a Codex config.toml:
// only the line shapes the snippet uses (key = "string" | 'literal' |
// ["array"] | { "K" = "V" }), since go.sum has no TOML library and the
// snippet does not justify one; an unknown shape fails the test.
func tomlServers(text string) (map[string]hostServer, error) {
	out := map[string]hostServer{}
	var name string
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			name = strings.TrimSuffix(strings.TrimPrefix(line, "[mcp_servers."), "]")
			if name == line || strings.ContainsAny(name, "[].") {
				return nil, fmt.Errorf("line %d: table %s is not [mcp_servers.NAME]", n+1, line)
			}
			out[name] = hostServer{}
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: %q", n+1, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		s := out[name]
		var err error
		switch key {
		case "command":
			s.Command, err = tomlString(val)
		case "url":
			s.URL, err = tomlString(val)
		case "args":
			s.Args, err = tomlArray(val)
		case "env_vars":
			s.EnvVars, err = tomlArray(val)
		case "bearer_token_env_var":
			s.BearerTokenEnvVar, err = tomlString(val)
		case "bearer_token":
			s.InlineBearerTokenSet = true
		case "env", "http_headers":
			m, e := tomlInlineTable(val)
			err = e
			if key == "env" {
				s.Env = m
			} else {
				s.Headers = m
			}
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: %w", n+1, line, err)
		}
		out[name] = s
	}
	return out, nil
}

func tomlString(v string) (string, error) {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1], nil
	}
	var s string
	err := json.Unmarshal([]byte(v), &s) // a basic TOML string without escapes beyond JSON's
	return s, err
}

func tomlArray(v string) ([]string, error) {
	var a []string
	err := json.Unmarshal([]byte(v), &a)
	return a, err
}

func tomlInlineTable(v string) (map[string]string, error) {
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return nil, fmt.Errorf("not an inline table")
	}
	m := map[string]string{}
	for _, kv := range strings.Split(strings.Trim(v, "{} "), ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q", kv)
		}
		key, err := tomlString(strings.TrimSpace(k))
		if err != nil {
			return nil, err
		}
		if m[key], err = tomlString(strings.TrimSpace(val)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func TestHostSnippets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(hostsDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snippets in %s: %v", hostsDir, err)
	}
	var connect, serve int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var servers map[string]hostServer
		switch filepath.Ext(f) {
		case ".json":
			if strings.HasSuffix(f, ".bridge.json") {
				// Not a host's file: what connect --config reads.
				if err := checkBridgeFile(b); err != nil {
					t.Errorf("%s: %v", f, err)
				}
				continue
			}
			servers, err = jsonServers(b)
		case ".toml":
			servers, err = tomlServers(string(b))
		case ".md":
			if strings.Contains(string(b), "--bearer-token ") {
				t.Errorf("%s: shows --bearer-token", f)
			}
			continue
		default:
			t.Errorf("%s: a snippet this test does not check", f)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(servers) == 0 {
			t.Errorf("%s: no servers", f)
		}
		for name, s := range servers {
			if err := checkServer(s); err != nil {
				t.Errorf("%s: %s: %v", f, name, err)
			}
			if s.Command != "" {
				connect++
			} else {
				serve++
			}
		}
	}
	t.Logf("%d files, %d connect entries, %d serve entries", len(files), connect, serve)
}

// checkBridgeFile checks an mcp-bridge --config file: it loads (every
// ${VAR} set), and its headers and env hold only placeholders.
func checkBridgeFile(b []byte) error {
	if _, err := teamconfig.Parse(b, func(name string) (string, bool) { return "replace-me-" + name, true }); err != nil {
		return err
	}
	servers, err := jsonServers(b)
	if err != nil {
		return err
	}
	for name, s := range servers {
		for k, v := range s.Headers {
			if !placeholder.MatchString(v) {
				return fmt.Errorf("%s: header %s=%q: not a placeholder or a ${VAR} reference", name, k, v)
			}
		}
		for k, v := range s.Env {
			if !placeholder.MatchString(v) {
				return fmt.Errorf("%s: env %s=%q: not a placeholder or a ${VAR} reference", name, k, v)
			}
		}
	}
	return nil
}

// The checker must reject what the snippets must never show.
func TestHostSnippetCheckerRejects(t *testing.T) {
	bad := map[string]string{
		"flag in args":   `{"mcpServers":{"x":{"command":"mcp-bridge","args":["connect","https://h/mcp","--bearer-token","${input:t}"]}}}`,
		"literal in env": `{"mcpServers":{"x":{"command":"mcp-bridge","args":["connect","https://h/mcp"],"env":{"MCP_BRIDGE_BEARER_TOKEN":"sk_live_4eC39HqLyjWDarjtT1zdp7dc"}}}}`,
		"literal header": `{"mcpServers":{"x":{"command":"mcp-bridge","args":["connect","https://h/mcp","-H","Authorization: Bearer abc123"]}}}`,
		"not connect":    `{"mcpServers":{"x":{"command":"mcp-bridge","args":["serve","--","memos"]}}}`,
		"no url":         `{"mcpServers":{"x":{"command":"mcp-bridge","args":["connect","mcp.example.com"]}}}`,
		"sse serve form": `{"mcpServers":{"x":{"type":"sse","url":"http://127.0.0.1:8080/mcp"}}}`,
		"header token":   `{"mcpServers":{"x":{"type":"http","url":"http://127.0.0.1:8080/mcp","headers":{"Authorization":"Bearer eyJhbGciOiJIUzI1NiJ9abc"}}}}`,
	}
	for name, doc := range bad {
		servers, err := jsonServers([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := checkServer(servers["x"]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	toml := "[mcp_servers.x]\ncommand = \"mcp-bridge\"\nargs = [\"connect\", \"https://h/mcp\"]\nbearer_token = \"abc\"\n"
	servers, err := tomlServers(toml)
	if err != nil {
		t.Fatal(err)
	}
	if checkServer(servers["x"]) == nil {
		t.Error("inline bearer_token accepted")
	}
}
