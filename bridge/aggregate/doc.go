// Package aggregate multiplexes N downstream MCP servers behind one
// upstream session, at the level of stdio JSON-RPC lines.
//
// An [Aggregator] speaks the 2025 handshake era on both sides: the upstream
// client initializes it like any stdio server, and it initializes every
// downstream as a client would, forwarding the client's capabilities and
// clientInfo. The upstream sees one server whose tools and prompts are
// named <server><sep><name>, whose resources keep their URIs when those
// are unique, and whose capabilities are the union of the downstreams'.
//
// Everything that crosses is routed by a table the Aggregator owns: it
// mints the id of every request it sends downstream and of every request
// it relays upstream, and the progress tokens in them, so no id or token
// chosen by one downstream ever reaches the upstream or another downstream
// unmapped. A downstream answering with an id it was not given, or twice,
// is dropped and logged.
//
// A downstream that fails to start or dies is logged and leaves the lists
// (the upstream is told with list_changed); calls routed to it get a
// JSON-RPC error; the others keep working.
//
// Messages are read with bridge/wire and forwarded byte for byte, with only
// the spans that must change (an id, a name, a URI, a progress token)
// spliced. One goroutine reads each stream, writes go through a
// lineio.Writer per stream, every table has a bound, and Run joins every
// goroutine it started before it returns.
package aggregate
