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
// The remote side — what a remote of each era needs on the wire (session
// and GET stream; request-metadata headers and listen streams), the HTTP
// exchange of a request, the era probe — is bridge/remote's (a
// remote.Remote); this package is the host side and the wiring. Files are
// named by who speaks which era: legacyhost*.go and modernhost*.go hold
// the translation for a host of that era on a remote of the other.
//
// When host and remote speak different eras the bridge translates
// (Config.Protocol pins the remote's era; auto detects it from the
// remote's answers, probing server/discover when they are ambiguous, see
// era.go and detect.go). The translations themselves — versions, the
// handshake, the envelope, input rounds, result completion — are
// bridge/translate's, the transport bridge/remote's; this package owns the maps of
// pending calls and streams, and who is asked. A legacy host on a 2026-07-28-only remote
// (legacyhost*.go, driving bridge/translate/legacysession, which plays the
// session for serve too) gets its initialize answered from server/discover,
// its requests enveloped in _meta, input rounds turned into real
// server-to-client requests and list_changed from a subscriptions/listen
// stream. A 2026-07-28 host on a legacy-only remote (modernhost*.go) gets
// server/discover answered from a legacy session the bridge opens,
// resultType and caching hints added, server-to-client requests turned
// into input rounds, and change notifications on its own
// subscriptions/listen streams. docs/compatibility.md lists what cannot be
// translated.
//
// Lifecycle: New, then Run until the host closes stdin (in-flight requests
// get a bounded time to finish, the session is deleted) or ctx ends.
package connect
