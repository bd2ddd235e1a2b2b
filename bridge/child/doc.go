// Package child is the side of `mcp-bridge serve` that faces the MCP
// server: a stdio child process (or an in-process server) as a peer.
//
// A Conn is one child's connection: calls (Call) go to the child under
// bridge-minted ids, which also serve as their progress tokens and
// subscription ids, and every message the child writes is routed back by
// that id to the call's client stream (onMessage, Route) in the client's
// own terms; what no call claims goes to the connection's Owner. Shared is
// the child every 2026-07-28 client shares (the era probe decides what it
// speaks; a legacy child is initialized by the bridge and its
// server-to-client requests become input rounds), Principals gives each
// principal one of its own (--child-per principal), LegacyShared is the
// one child of all 2025 sessions in --session-mode shared, and WarmPool
// keeps children started for new sessions (--warm-children).
//
// The package speaks no HTTP: serve's front (its Handler and 2025 session
// table) owns the requests and streams and wires them to these types,
// giving them what they need of it in an Env.
package child
