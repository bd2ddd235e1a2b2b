// Package bridge holds the MCP semantics of mcp-bridge, in subpackages:
//
//   - [github.com/mcp-bridge/mcp-bridge/bridge/wire]: the JSON-RPC envelope
//     read in place (ids, methods, params and _meta fields as spans of the
//     original bytes), splicing, and the 2026-07-28 header encodings.
//   - [github.com/mcp-bridge/mcp-bridge/bridge/serve]: the http.Handler that
//     exposes a stdio MCP server over Streamable HTTP, for both protocol eras.
//   - [github.com/mcp-bridge/mcp-bridge/bridge/connect]: the stdio pump that
//     makes a remote Streamable HTTP server usable by a stdio-only host.
//   - [github.com/mcp-bridge/mcp-bridge/bridge/aggregate]: a stdio-level
//     multiplexer that serves one client session over many MCP servers
//     (the gateway's aggregated /mcp endpoint).
//   - [github.com/mcp-bridge/mcp-bridge/bridge/teamconfig]: the `serve
//     --config` file (hosts' mcpServers plus an mcpBridge section).
//   - [github.com/mcp-bridge/mcp-bridge/bridge/exec]: `mcp-bridge exec`, a
//     stdio MCP server whose tools are the command-line programs of a file.
//   - [github.com/mcp-bridge/mcp-bridge/bridge/gateway]: many servers (and
//     the aggregated endpoint) behind one http.Handler; the one package
//     that imports both serve and connect.
//
// Imports flow one way: cmd/mcp-bridge → bridge/... → {httpclient,
// stdiohost → lineio}. The rule is enforced by this package's tests.
package bridge
