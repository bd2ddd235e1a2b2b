// Package serve makes a stdio MCP server (the child) usable as a
// Streamable HTTP MCP server at /mcp, for clients of both protocol eras.
//
// A 2025 (handshake-era) client gets a session (Mcp-Session-Id): by default
// a child of its own, or, with the shared session mode, one child for all
// sessions with the bridge keeping their request ids, progress tokens and
// server-to-client requests apart. A 2026-07-28 client sends each request
// self-contained (_meta envelope, no session) to one shared child.
//
// When client and child speak different eras the bridge translates; which
// eras the child speaks is probed at start (server/discover and initialize
// on two throwaway sibling processes). The translations themselves —
// versions, initialize ⇄ server/discover, the _meta envelope, input rounds
// ⇄ server-to-client requests, result completion — are bridge/translate's;
// the children, their connections and the maps that tie a client's request
// to the child's are bridge/child's; this package owns the HTTP side
// (validation, SSE streams, sessions, budgets) and wires it to them.
//
// Files are named by what they serve: modern.go routes 2026-07-28
// clients' requests to their shared child; sessions.go and
// session_translate.go are 2025 sessions, per child and on a 2026-07-28
// child (the latter played by bridge/translate/legacysession);
// children.go is where the Handler meets bridge/child (its Env, the HTTP
// ends of input rounds and listen streams). docs/compatibility.md lists
// what is translated and what cannot be.
package serve
