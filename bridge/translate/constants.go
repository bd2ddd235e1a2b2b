package translate

import (
	"strings"
	"time"
)

// The values both faces share when they translate, so that a peer sees
// the same bridge whichever face it talks to.

// InputTTL is how long a call suspended in an input round (a 2025 peer's
// server-to-client request carried to a 2026-07-28 peer as an
// InputRequiredResult) waits for the retry that answers it; then the call
// is given up and its request state forgotten.
const InputTTL = 10 * time.Minute

// StatePrefix begins every request state the bridge mints (NewState), so
// a retry carrying one can be told from a request that merely carries a
// state of someone else's. A state is opaque to the peer, but a peer may
// hold one across a restart of the bridge and retry with it: the prefix
// must not change, or such a retry would be taken for someone else's
// state instead of one the bridge has forgotten (ExpiredState). It is
// serve's, which has checked it since states were first minted; connect's
// states ("mcp-bridge-") were never checked by prefix, only looked up.
const StatePrefix = "mcp-bridge:"

// IsBridgeState reports whether request state s was minted by a bridge.
func IsBridgeState(s string) bool { return strings.HasPrefix(s, StatePrefix) }

// InternalIDPrefix begins the JSON-RPC ids of the bridge's own requests
// to a peer (a probe, a server-to-client request it re-numbers or makes
// up): easy to spot in logs, and distinct from the numeric ids hosts and
// clients mostly use.
const InternalIDPrefix = "mcp-bridge-"

// MaxSubscriptions bounds the resource subscriptions one listen stream (or
// one translated 2025 session) holds at a peer: each is a request the
// bridge sends the back and a URI it keeps, and a single listen request
// could otherwise name as many as its body holds. The acknowledgement lists
// only the URIs honoured, so a client sees which were left out.
const MaxSubscriptions = 1024
