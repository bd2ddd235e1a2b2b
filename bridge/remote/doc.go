// Package remote is connect's remote side: the MCP server as a peer over
// Streamable HTTP (or the legacy HTTP+SSE transport, behind httpclient),
// with or without a 2025 session.
//
// A Remote sends one host request and relays its answer (Forward: the
// request metadata headers, resumption of a broken response stream, the
// replay of the host's handshake when a 2025 session expired), sends a
// host batch (Batch), what expects no answer (Send, Tell) and requests of
// the bridge's own (RoundTrip, Request), keeps the 2025 session (its id,
// negotiated version, the host's handshake for replay, a session of the
// bridge's own (Open), the standalone GET stream, the DELETE at the end),
// learns the x-mcp-header bindings of the remote's tools, keeps listen
// streams open (Relisten for a 2026-07-28 host's request, Listen for the
// bridge's own), probes the remote's era with server/discover and caches
// the verdict per endpoint, and turns a failure into the JSON-RPC error
// the host sees (Describe, BatchRefusal).
//
// It knows nothing of the host: the messages no request of the host waits
// for on its own stream go to Config's callbacks (Unsolicited, Stray),
// and a request in flight is a Call (connect's pending), which takes the
// messages of its response stream, each checked to be JSON and a batch
// split (deliver). What the era verdict means, and when to probe, is
// bridge/translate's and connect's (detect.go).
//
// Files: remote.go (Config, Remote, Send, Tell), exchange.go (Forward,
// RoundTrip, Request, the errors), batch.go (one JSON message at a time:
// deliver; a host batch's POST), session.go (the 2025 session, Open),
// headers.go (request metadata headers, Mcp-Param tools), listen.go
// (listen streams: Relisten, Listen), era.go (probe, verdict cache, HTTP
// refusals as evidence), transport.go (HTTP+SSE as a 2025 session).
package remote
