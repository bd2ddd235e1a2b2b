package serve

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/secretenv"
)

// ErrTokenInChild is returned by New when the child's command line carries
// an inbound bearer token.
var ErrTokenInChild = errors.New("serve: the child's command line contains an --auth-token value (or a token of --auth-token-file)")

// command returns a fresh child command whose environment holds no
// credential of the bridge's. It is the one place every child (shared,
// per session, per principal, probe sibling) is built, so the scrub cannot
// be missed by a new kind of child.
func (h *Handler) command() *exec.Cmd {
	cmd := h.cfg.Command()
	env := cmd.Env
	if env == nil {
		env = os.Environ() // what exec would otherwise inherit
	}
	cmd.Env = scrubEnv(env, append(h.cfg.allTokens(), h.guard.tokens.Load().raw...))
	return cmd
}

// scrubEnv drops the secret variables and any variable whose value holds
// one of the inbound tokens (an operator's own MY_TOKEN=... copy of it).
func scrubEnv(env, tokens []string) []string {
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

// checkChildArgs refuses a child command line that carries an inbound
// token: argv is visible to every local user (ps) and to the child.
func checkChildArgs(cfg *Config) error {
	tokens := cfg.allTokens()
	if len(tokens) == 0 || cfg.Command == nil {
		return nil
	}
	for _, a := range cfg.Command().Args {
		for _, t := range tokens {
			if strings.Contains(a, t) {
				return ErrTokenInChild
			}
		}
	}
	return nil
}
