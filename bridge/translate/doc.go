// Package translate is the bridge's knowledge of the two protocol eras and
// the translations between them, written once for both directions: serve
// (HTTP clients in front of a stdio child) and connect (a stdio host in
// front of an HTTP remote). Each direction meets both translations — a
// 2026-07-28 peer on a 2025 peer and the reverse — so each piece lives here
// and the two packages are adapters that own only their transport and their
// maps (sessions, pending calls, streams).
//
// What lives here:
//   - the protocol versions, which are modern, and the negotiation of one
//     (versions.go);
//   - initialize ⇄ server/discover: capabilities, serverInfo, instructions
//     and cache hints (handshake.go);
//   - the 2026-07-28 _meta envelope ⇄ a 2025 session's capabilities and
//     log level (envelope.go);
//   - input rounds (InputRequiredResult, 2026-07-28 basic/patterns/mrtr) ⇄
//     server-to-client requests: building the result, minting and reading
//     the request state, collecting the input responses, carrying progress
//     across rounds (rounds.go); and the stateful machine of a 2026-07-28
//     front over a 2025 back — calls suspended in rounds, asks keyed
//     input-N, the TTL, the retry's take and re-suspension — against a
//     small per-face interface, RoundFace (suspension.go);
//   - result completion: resultType and the cache hints (results.go);
//   - listen streams of a 2026-07-28 front on a legacy back: the
//     acknowledgement, the back's resource subscriptions, the fan-out of its
//     change notifications (listenhub.go);
//   - URL-mode elicitation: 2025-11-25's -32042 error and completion
//     notification ⇄ 2026-07-28 URL input rounds (urlelicit.go);
//   - which input requests a client's capabilities cover, with the
//     sub-capabilities of sampling with tools and elicitation modes
//     (sampling.go);
//   - tasks: 2025-11-25 experimental tasks ⇄ the Tasks extension
//     (SEP-2663) — capabilities, CreateTaskResult, tasks/get, cancel and
//     the outcome; withheld where they do not map (tasks.go).
//
// The stateful machine of a 2025 session on a 2026-07-28 peer lives in the
// sub-package legacysession, written once for both faces.
//
// bridge/wire stays the byte-level layer below: translate builds and edits
// messages with it and never re-encodes what it forwards.
package translate
