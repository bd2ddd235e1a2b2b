// Package wire reads and edits JSON-RPC messages at the byte level.
//
// A bridge routes messages it does not own: it needs a request's id, method
// and a few params (name, uri, _meta fields), and it must hand the payload
// on byte for byte — re-encoding would lose number precision, key order and
// unknown fields (an id of 9007199254740993 does not survive a round trip
// through float64). [Parse] therefore records where those fields sit in the
// original bytes instead of decoding them, and [Splice] builds a new message
// from the original with a few spans replaced (an id, a progress token, a
// subscription id).
//
// Parse reads a message the way the peers on either side decode it, or
// refuses it: a key the bridge routes on that is duplicated, escaped or
// spelled in another case is [ErrAmbiguous], because a Go peer would read
// "ID", "\u0069d" or a second "id" where Parse reads the first "id" (see
// keys.go for why refusing beats canonicalizing). [Field] gives no reading
// of an ambiguous key either.
//
// Parse checks the structure it walks (objects, arrays, strings and the
// nesting between them) but not every literal; callers that must answer
// malformed input with a parse error run Valid on untrusted input
// first. Messages from a peer that already framed them (a child's stdout, an
// SSE event) are parsed without that extra pass, which keeps a 16 MiB tool
// result from being scanned twice.
package wire
