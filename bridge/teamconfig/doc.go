// Package teamconfig reads the configuration file of `mcp-bridge serve
// --config`: the "mcpServers" object MCP hosts write (Claude Desktop and
// Code, Cursor; VS Code's "servers" spelling too), pasted as-is, plus an
// optional "mcpBridge" section for what hosts have no words for (the
// listener, limits, per-server session handling and tool filters).
//
// Host keys the bridge does not use ("timeout", "autoApprove",
// "alwaysAllow", ...) are tolerated, so a host's file works unchanged; keys
// of the bridge's own section must be known, so that a typo there is an
// error rather than a setting silently not applied.
package teamconfig
