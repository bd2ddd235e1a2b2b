package teamconfig

import (
	"fmt"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/secretenv"
)

// expand replaces ${VAR} and ${VAR:-default} in s with values from
// lookup, the way hosts do (Claude Code's .mcp.json). A variable that is
// not set (and has no default) is an error that names it; values never
// appear in errors, since headers carry tokens.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ reference")
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVar(name) {
			if strings.HasPrefix(ref, "input:") || strings.HasPrefix(ref, "env:") {
				return "", fmt.Errorf("${%s}: VS Code's ${input:…} and ${env:…} variables are not supported; use ${NAME}", ref)
			}
			return "", fmt.Errorf("${%s}: not a variable name (letters, digits and '_')", ref)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && (!ok || v == ""):
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validVar(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// minSecretValue is the shortest credential value searched for in a
// child's fields: a shorter one ("1", "x") would match innocent
// arguments, and is no secret anyone relies on.
const minSecretValue = 8

// expandForChild is expand for the fields that become a stdio child's
// command line, environment or working directory. The bridge's own
// credentials must not get there: a child (and, through argv, every
// local user) would hold them, and a server that echoes its environment
// or arguments would hand them to any caller. So a reference to one of
// secretenv.Vars is refused, and so is a result that contains the value of
// one of them (an operator's own copy of the secret in another variable,
// or written out in the file).
func expandForChild(s string, lookup func(string) (string, bool)) (string, error) {
	for _, name := range secretenv.Vars {
		if refersTo(s, name) {
			return "", fmt.Errorf("${%s} is a credential of the bridge itself and is not given to a child (its command line and environment are readable by it, and argv by every local user); give the child a credential of its own", name)
		}
	}
	out, err := expand(s, lookup)
	if err != nil {
		return "", err
	}
	for _, name := range secretenv.Vars {
		v, _ := lookup(name)
		for _, secret := range strings.Split(v, ",") { // MCP_BRIDGE_AUTH_TOKEN holds a list
			secret = strings.TrimSpace(secret)
			if len(secret) >= minSecretValue && strings.Contains(out, secret) {
				return "", fmt.Errorf("the value holds the bridge's own credential %s, which is not given to a child; give the child a credential of its own", name)
			}
		}
	}
	return out, nil
}

// refersTo reports whether s has a ${name} or ${name:-…} reference.
func refersTo(s, name string) bool {
	for {
		i := strings.Index(s, "${"+name)
		if i < 0 {
			return false
		}
		rest := s[i+2+len(name):]
		if strings.HasPrefix(rest, "}") || strings.HasPrefix(rest, ":-") {
			return true
		}
		s = rest
	}
}

// Expand is the ${VAR} and ${VAR:-default} expansion of the config files,
// for the other files the bridge reads the same way (exec's tools file).
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	return expand(s, lookup)
}
