// Package gateway serves many MCP servers behind one http.Handler, as
// `mcp-bridge serve --config FILE` does: every enabled server of a
// teamconfig file gets its own serve.Handler at /servers/<name>/mcp, with
// the era handling, translation, limits and supervision of single-server
// serve. A stdio entry's child is its command; a remote entry's "child" is
// a connect.Bridge run in-process (serve.Config.Run), so the gateway
// proxies remote Streamable HTTP servers of either era too.
//
// A server that fails affects only its own route. Reload applies a new
// file: added servers start, removed ones stop, changed ones restart, and
// unchanged ones keep their handler and sessions; the aggregated endpoint
// keeps its sessions too (its servers change under them).
//
// The aggregated endpoint runs one bridge/aggregate Aggregator per caller
// (aggfront.go), which reaches each route as that caller (caller.go), in
// process: a session of the route's serve.Handler opened with
// serve.Handler.Open (dial.go), no HTTP and no connection in between. The
// route's own authorization, scopes, access log and metrics apply to the
// caller, never to a principal of the gateway's own.
//
// Only the gateway (and cmd) may import both serve and connect.
package gateway
