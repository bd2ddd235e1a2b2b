package connect

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Config.ToolFilter is applied where every era's traffic meets: a host's
// request before it is relayed (or translated), and the host's answer to a
// tools/list as it is written (writeFinalOf), whichever era produced it.
// What hiding means is bridge/wire's (toolfilter.go), shared with serve.

// refuseHidden answers p, a tools/call of a tool the filter hides, and
// reports whether it did; the remote never sees the call.
func (b *Bridge) refuseHidden(p *pending, m *wire.Message) bool {
	if !wire.HiddenCall(m, b.cfg.ToolFilter) {
		return false
	}
	b.log.Debug().Str("tool", m.Name).Msg("tools/call of a filtered tool refused")
	b.writeFinal(p, wire.HiddenCallError(p.id, m.Name))
	return true
}

// filterTools drops the hidden tools from body, the host's answer to a
// tools/list; m, if not nil, is the remote's response body was made from
// (its outcome is body's).
func (b *Bridge) filterTools(body []byte, m *wire.Message) ([]byte, *wire.Message) {
	if b.cfg.ToolFilter == nil {
		return body, m
	}
	var hm wire.Message
	if wire.Parse(body, &hm) != nil {
		return body, m
	}
	if fm := wire.FilterTools(&hm, b.cfg.ToolFilter); fm != &hm {
		return fm.Raw, fm
	}
	return body, m
}
