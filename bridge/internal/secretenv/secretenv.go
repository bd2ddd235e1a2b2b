// Package secretenv names the environment variables through which the
// bridge receives its own credentials, once, for every place that must
// keep them from a child: serve scrubs them from every child's
// environment, and a --config file may not put them on a stdio entry's
// command line or environment. (mcp-bridge exec is stricter still: it
// passes no MCP_BRIDGE_* variable to a program at all.)
package secretenv

import "strings"

// Vars are the bridge's credential variables: the inbound tokens serve
// checks, the introspection client of its OAuth resource server, and
// connect's outbound token and OAuth client secret.
var Vars = []string{
	"MCP_BRIDGE_AUTH_TOKEN",
	"MCP_BRIDGE_INTROSPECTION_CLIENT_ID",
	"MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET",
	"MCP_BRIDGE_BEARER_TOKEN",
	"MCP_BRIDGE_OAUTH_CLIENT_SECRET",
}

// Is reports whether name is one of Vars. Windows variable names are
// case-insensitive, so the comparison is too: MCP_Bridge_Auth_Token is
// the same variable there.
func Is(name string) bool {
	for _, v := range Vars {
		if strings.EqualFold(name, v) {
			return true
		}
	}
	return false
}
