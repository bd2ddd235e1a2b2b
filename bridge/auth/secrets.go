package auth

import (
	"errors"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/secretenv"
)

// ErrTokenInChild is returned by CheckArgs (and serve's New) when the
// child's command line carries an inbound bearer token.
var ErrTokenInChild = errors.New("auth: the child's command line contains an --auth-token value (or a token of --auth-token-file)")

// ScrubEnv returns env without the secret variables and any variable
// whose value holds one of the inbound tokens (an operator's own
// MY_TOKEN=... copy of it). serve builds every child's environment with
// it.
func ScrubEnv(env, tokens []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		// The bridge's own credential variables (a child inherits the
		// bridge's environment, and a server that echoes its environment,
		// as server-everything's get-env does, would hand them to any
		// caller).
		if secretenv.Is(name) {
			continue next
		}
		for _, t := range tokens {
			if strings.Contains(val, t) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// CheckArgs refuses a child command line that carries an inbound token:
// argv is visible to every local user (ps) and to the child.
func CheckArgs(args, tokens []string) error {
	for _, a := range args {
		for _, t := range tokens {
			if strings.Contains(a, t) {
				return ErrTokenInChild
			}
		}
	}
	return nil
}
