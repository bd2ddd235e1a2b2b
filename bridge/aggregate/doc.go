// Package aggregate multiplexes N downstream MCP servers behind one
// upstream session, at the level of stdio JSON-RPC lines.
//
// An [Aggregator] speaks the 2025 handshake era on both sides: the upstream
// client initializes it like any stdio server, and it initializes every
// downstream as a client would, forwarding the client's capabilities and
// clientInfo. The upstream sees one server whose tools and prompts are
// named <server><sep><name>, whose resources keep their URIs when those
// are unique, and whose capabilities are the union of the downstreams' —
// but capabilities.extensions, advertised only when every server honours
// them (or, for one marked per entry such as MCP Apps, any server).
//
// Everything that crosses is routed by a table the Aggregator owns: it
// mints the id of every request it sends downstream and of every request
// it relays upstream, and the progress tokens in them, so no id or token
// chosen by one downstream ever reaches the upstream or another downstream
// unmapped. A downstream answering with an id it was not given, or twice,
// is dropped and logged.
//
// Names are given so that the result depends only on the lists: the
// servers in Config order, each list in its own order, the first entry to
// claim an exposed name keeps it. A later entry whose name is taken ("a_b"
// + "c" against "a" + "b_c") is renamed <name><sep>2 (then 3, ...), and a
// resource URI or URI template listed by two servers is kept by the first
// and exposed by the others as mcp-bridge://<server>/<their URI>. A
// ui:// URI (an MCP App's UI resource) keeps its scheme and always carries
// its server as the authority, ui://<server>/<the rest>, rewritten in
// tools' _meta.ui.resourceUri too (see apps.go). A server configured with
// Server.NoPrefix exposes its tools and prompts under their own names; such
// a bare name is kept only while one server alone claims it. Each
// collision is logged once per session; initialize lists everything once,
// so they are logged when the session starts. Requests are routed by
// these names: tools/call and prompts/get by name, resources/read,
// subscribe, unsubscribe and completion/complete by URI (a listed URI, the
// ui:// or mcp-bridge:// form, else the template with the longest literal prefix
// that matches, else the only server with resources).
//
// Task ids (2025-11-25 tasks) are namespaced the same way, signed so that
// an edited one reaches no task: <server>/<mac>/<its id>. Tasks requests
// are routed by them, and a task id in the client's answer to a server
// goes back as the server's own (see tasks.go).
//
// A downstream that fails to start or dies is logged and leaves the lists
// (the upstream is told with list_changed); calls routed to it get a
// JSON-RPC error; the others keep working. One that is slow to start does
// not hold the session up: initialize is answered after Config.JoinTimeout
// with the downstreams ready by then, and a later one joins when it has
// initialized (the upstream is told with list_changed; see join.go). A
// late downstream ranks after the others, so its entries are the ones
// renamed on a collision, logged when it joins. One that fails to start
// or to initialize is tried again (1 s, doubling to 30 s) and joins the
// same way. Every list is bounded per server by Config.ListTimeout
// (JoinTimeout unless set): a server that misses it is left out of that
// answer (Config.OnAbsent) and asked again at the next one, so a session
// is as fast as its healthiest servers.
//
// [Aggregator.SetServers] changes the servers under running sessions: a
// removed server is closed and leaves the lists, an added one joins as a
// late one, and the client is told with list_changed each time; the
// others keep their connections (see update.go).
//
// Messages are read with bridge/wire and forwarded byte for byte, with only
// the spans that must change (an id, a name, a URI, a progress token)
// spliced; a downstream's line must also pass wire.Valid, since its
// garbage would otherwise reach a client decoder shared by every server
// (a server reached in-process, Server.Open, hands over messages its
// Conn has checked so: each is parsed once on its way, in each direction).
// One goroutine reads each stream and never blocks on a downstream's input
// (what it sends there goes through a bounded queue), writes go through a
// lineio.Writer per stream, every table has a bound, and Run joins every
// goroutine it started before it returns.
package aggregate
