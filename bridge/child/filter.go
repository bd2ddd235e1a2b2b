package child

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The filter's rule (a hidden tool is neither listed nor callable) is
// bridge/wire's (toolfilter.go), shared with connect; this file applies it
// to a child's traffic.

// hidden reports whether m is a tools/call of a tool Config.ToolFilter
// hides.
func (c *Conn) hidden(m *wire.Message) bool { return wire.HiddenCall(m, c.filter) }

// refuseHidden answers a call of a hidden tool as if the child had: the
// error goes the way of any response (the client's id restored, a legacy
// session's bookkeeping settled), and the child never sees the request.
func (c *Conn) refuseHidden(cl *Call, m *wire.Message) error {
	c.log.Debug().Str("tool", m.Name).Msg("tools/call of a filtered tool refused")
	return c.answerForChild(cl, wire.HiddenCallError(wire.AppendInt(nil, cl.ChildID), m.Name))
}

// filterTools drops the hidden tools from a tools/list result page.
func (c *Conn) filterTools(m *wire.Message) *wire.Message { return wire.FilterTools(m, c.filter) }
