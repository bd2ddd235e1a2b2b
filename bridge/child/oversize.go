package child

import (
	"errors"
	"fmt"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// onBadLine is the host's OnBadLine: a child line the reader skipped,
// such as one over --max-message-size. Every request gets an answer: when
// the skipped line is an answer whose id can be read from its ends
// (wire.PeekEnvelope), the request it answers gets a JSON-RPC error at
// once, as if the child had sent it; when it is a request of the child's,
// the child gets the error. An id that cannot be read (it sits between two
// huge members, or the ends contradict each other) is never guessed: no
// other request is failed in its place, the warning says so, and the
// request it answered waits for its own deadline (the client's, or a
// cancellation), as one the child never answered would.
func (c *Conn) onBadLine(err error) {
	var tl *lineio.TooLongError
	if !errors.As(err, &tl) {
		c.warn.Warn(c.log, "long_line").Err(err).Msg("child stdout line skipped")
		return
	}
	p := wire.PeekEnvelope(tl.Head, tl.Tail)
	msg := fmt.Sprintf("mcp-bridge: the MCP server's message of %d bytes is over --max-message-size (%d bytes) and was dropped", tl.Size, tl.Limit)
	data := wire.AppendInt(append([]byte(nil), `{"size_bytes":`...), tl.Size)
	data = wire.AppendInt(append(data, `,"limit_bytes":`...), int64(tl.Limit))
	data = append(data, '}')
	var cl *Call
	if id, ok := wire.ParseIntID(p.ID); ok && p.Response {
		cl = c.get(id) // the bridge mints the ids of what it sends: an integer
	}
	switch {
	case cl != nil:
		c.warn.Warn(c.log, "long_answer").Int64("size_bytes", tl.Size).Int("limit_bytes", tl.Limit).
			Int64("child_id", cl.ChildID).Str("method", cl.Method).Msg("child answer over --max-message-size; its request gets an error instead")
		var m wire.Message
		if wire.Parse(wire.ErrorResponse(p.ID, wire.CodeInternalError, msg, data), &m) == nil {
			c.onResponse(&m)
		}
	case p.Method && p.ID != nil && string(p.ID) != "null":
		c.warn.Warn(c.log, "long_request").Int64("size_bytes", tl.Size).Int("limit_bytes", tl.Limit).
			RawJSON("id", p.ID).Msg("child request over --max-message-size; answered with an error")
		if err := c.Send(wire.ErrorResponse(p.ID, wire.CodeInvalidRequest, msg, data)); err != nil {
			c.log.Debug().Err(err).Msg("could not answer the child's oversized request")
		}
	default:
		// A notification, an answer to a request no longer pending, or a
		// line whose id is not readable: nothing can be answered.
		c.warn.Warn(c.log, "long_line").Int64("size_bytes", tl.Size).Int("limit_bytes", tl.Limit).
			Bool("id_read", p.ID != nil).Msg("child stdout line over --max-message-size skipped; no request answered for it")
	}
}
