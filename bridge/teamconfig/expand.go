package teamconfig

import (
	"fmt"
	"strings"
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

// Expand is the ${VAR} and ${VAR:-default} expansion of the config files,
// for the other files the bridge reads the same way (exec's tools file).
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	return expand(s, lookup)
}
