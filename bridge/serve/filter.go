package serve

import (
	"strconv"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// hidden reports whether m is a tools/call of a tool Config.ToolFilter
// hides.
func (c *childConn) hidden(m *wire.Message) bool {
	return c.filter != nil && m.Kind == wire.KindRequest && m.Method == "tools/call" && !c.filter(m.Name)
}

// refuseHidden answers a call of a hidden tool as if the child had: the
// error goes the way of any response (the client's id restored, a legacy
// session's bookkeeping settled), and the child never sees the request.
func (c *childConn) refuseHidden(cl *call, m *wire.Message) error {
	c.log.Debug().Str("tool", m.Name).Msg("tools/call of a filtered tool refused")
	idb := wire.AppendInt(nil, cl.childID)
	raw := wire.ErrorResponse(idb, wire.CodeInvalidParams, "tool "+strconv.Quote(m.Name)+" is not available", nil)
	var resp wire.Message
	if err := wire.Parse(raw, &resp); err != nil {
		return err
	}
	if err := c.register(cl); err != nil {
		return err
	}
	c.onResponse(&resp)
	return nil
}

// filterTools drops the hidden tools from a tools/list result page. Only
// a page that hides something is re-encoded, and only its tools array
// changes; every other byte passes as the child wrote it.
func (c *childConn) filterTools(m *wire.Message) *wire.Message {
	if c.filter == nil || !m.Result.Present() {
		return m
	}
	tools, ok := wire.Field(m.Raw, m.Result, "tools")
	if !ok {
		return m
	}
	elems, err := wire.Elements(m.Raw, tools)
	if err != nil {
		return m
	}
	kept := make([]byte, 0, tools.End-tools.Start)
	kept = append(kept, '[')
	dropped := 0
	for _, e := range elems {
		if name, _ := wire.StringField(m.Raw, e, "name"); !c.filter(name) {
			dropped++
			continue
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, m.Raw[e.Start:e.End]...)
	}
	if dropped == 0 {
		return m
	}
	kept = append(kept, ']')
	var out wire.Message
	if err := wire.Parse(wire.Splice(m.Raw, wire.Edit{Span: tools, Value: kept}), &out); err != nil {
		return m
	}
	return &out
}
