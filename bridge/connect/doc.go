// Package connect makes a remote Streamable HTTP MCP server usable as a
// local stdio MCP server.
//
// A host that only speaks stdio launches the bridge as its "server"; the
// bridge reads newline-delimited JSON-RPC from the host, POSTs each message
// to the remote endpoint with the headers the protocol requires, and writes
// every message that comes back — a JSON body or each SSE event — as one
// line to the host. Requests run concurrently; writes to the host are
// serialized and carry nothing but MCP messages.
//
// Both protocol eras pass through: 2026-07-28 requests carry their version
// in params._meta, from which the request metadata headers are derived;
// legacy (2025-xx) sessions are kept alive across a server's 404 by
// replaying the host's handshake. Every request the host sends gets exactly
// one response — the server's, or a JSON-RPC error that says what went
// wrong (HTTP status, body excerpt) — unless the host cancelled it.
//
// Lifecycle: New, then Run until the host closes stdin (in-flight requests
// get a bounded time to finish, the session is deleted) or ctx ends.
package connect
