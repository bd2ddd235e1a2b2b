// Package httpclient is the client side of the MCP Streamable HTTP
// transport, with opaque message bodies: it moves JSON-RPC messages as byte
// slices and never decodes them. The caller (package bridge) owns JSON-RPC
// and MCP semantics, including which per-message headers to send.
//
// # Usage
//
// A [Client] talks to one endpoint. [Client.Post] sends one message and
// returns a [*Response] whose [Response.Next] yields the messages the server
// sends back:
//
//   - [KindAccepted]: 202, or a 2xx with no body; Next returns io.EOF.
//   - [KindJSON]: one message, the body as received.
//   - [KindSSE]: the data of each SSE event, then io.EOF at the clean end.
//
// The caller must Close every Response. Closing an unfinished stream aborts
// the HTTP request, which a 2026-07-28 server treats as cancellation.
//
// # Legacy sessions (2025-03-26 to 2025-11-25)
//
// A 2xx POST response with an Mcp-Session-Id header sets the session id,
// which every later request carries. [Client.Listen] runs the standalone GET
// stream and reconnects with Last-Event-ID, honouring the server's retry
// field. [Client.Resume] re-attaches to a POST stream that broke or that the
// server closed after a priming event (SEP-1699 polling).
// [Client.Terminate] sends DELETE and forgets the session. After a 404 the
// caller must start a new session: clear the id with SetSessionID("") and
// initialize again.
//
// # Retries
//
// A request is sent again only when it cannot have reached the server (a
// dial or DNS error) or when the server answered 429 or 503, waiting for
// Retry-After if present. A timeout or a connection reset after the request
// was written is returned as is: a tools/call must never run twice.
//
// # Errors
//
// A status outside 2xx is a [*StatusError] with the status, the headers and
// the start of the body. A GET answered with 405 is [ErrNoStream]. A 2xx
// with an unexpected media type is a [*ContentTypeError]
// ([ErrUnexpectedContentType]). An event larger than [Client.MaxEventSize]
// is [ErrEventTooLarge]. When the context ends, methods return ctx.Err().
//
// # Framing
//
// SSE is framed by r3labs/sse/v2's EventStreamReader; the fields are parsed
// by this package per the WHATWG rules. sseframer.go says why the library is
// used only as a framer and holds the workarounds around it. The package
// imports no other package of this module, starts no goroutines and never writes to stdout; logs go to
// [Client.Logger] and never contain header values.
package httpclient
