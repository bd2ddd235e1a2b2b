// Package stream is serve's stream engine: how the messages a child sends
// for one HTTP request reach that request's response. The name says what
// a newcomer looks for: everything between "a message is queued for a
// client" and "its bytes are on the client's connection" — the HTTP front,
// sessions, children and translation (bridge/serve, bridge/translate) sit
// on top and only queue messages and start pumps. (Not "sse": a stream
// may end as one JSON answer; not "respond": the queues, their budgets and
// the replay log are more than the answer.)
//
//   - Sink (sink.go): the bounded queue of one response stream; the child's
//     reader pushes without blocking, charged to Limits (limits.go), the
//     budgets every stream of a Handler shares (cut the largest holder).
//   - Responder (respond.go): one POST's answer, a single JSON message or
//     an SSE stream, decided by what comes first; pump copies a sink into
//     it with keepalives from one shared clock.
//   - Engine (engine.go): what a Handler's streams share. A stream that
//     waits leaves net/http (detach.go: a hijacked HTTP/1.1 connection,
//     chunked by hand), is served by events (evstream.go) and written by a
//     small writer pool (writers.go); its client's hang-up is seen by one
//     epoll set on Linux (hangup_linux.go), elsewhere by a reader each.
//     Only hijackable HTTP/1.1 responses whose caller asked (MayDetach)
//     leave; every other stream stays in its handler.
//   - ReplayLog (replay.go, replay_budget.go): 2025 sessions' event ids,
//     the resumption buffer and the budget all logs share.
//
// The package speaks HTTP (it writes responses and owns their connections
// once detached) but keeps no session table, child, translation or
// authentication state; it imports neither face (bridge/deps_test.go).
package stream
