package hostio

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// An over-long host line is skipped unread, but the request in it still
// deserves its own answer: "the server MUST send a response ... with the
// same ID" (JSON-RPC requests), and an error with a null id answers none
// of the host's requests. The reader keeps the line's first and last
// bytes, and wire.PeekEnvelope reads the envelope there, as serve does for
// a child's oversized answer. Only a request (a "method" and an id) is
// answered: a response, a notification or bytes that are no JSON-RPC get
// the null-id error they always got.

// skippedID returns the id of the request in a skipped line, or nil.
func skippedID(tl *lineio.TooLongError) []byte {
	p := wire.PeekEnvelope(tl.Head, tl.Tail)
	if !p.Method {
		return nil
	}
	return p.ID
}
