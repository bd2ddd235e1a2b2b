package connect

import (
	"time"

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

// refuseHiddenInBatch answers the calls of hidden tools among the elements
// of a batch the remote is to get as one POST (passBatch) and returns the
// batch without them; the rest passes byte for byte. No elements left: no
// POST.
func (b *Bridge) refuseHiddenInBatch(raw []byte, elems []wire.Span) ([]byte, []wire.Span) {
	if b.cfg.ToolFilter == nil {
		return raw, elems
	}
	kept := make([]wire.Span, 0, len(elems))
	for _, e := range elems {
		var m wire.Message
		if wire.Parse(raw[e.Start:e.End], &m) == nil && wire.HiddenCall(&m, b.cfg.ToolFilter) {
			p := &pending{id: clone(m.IDBytes()), method: m.Method, started: time.Now(), cancel: func() {}, ex: pass{b}}
			if b.register(p) {
				b.refuseHidden(p, &m)
				b.retire(p)
			}
			continue
		}
		kept = append(kept, e)
	}
	switch len(kept) {
	case len(elems):
		return raw, elems
	case 0:
		return nil, nil
	}
	out := wire.Rebatch(raw, kept, make([][]byte, len(kept)))
	ks, err := wire.BatchElements(out)
	if err != nil {
		return nil, nil
	}
	return out, ks
}
