package remote

import (
	"bytes"
	"context"
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// HeadersFor derives the HTTP headers a message needs from its body.
func (r *Remote) HeadersFor(m *wire.Message) http.Header {
	if !m.IsModern() {
		if m.Method == "initialize" {
			return http.Header{}
		}
		return r.sess.header()
	}
	h := http.Header{}
	// 2026-07-28 streamable-http §Request metadata: MCP-Protocol-Version
	// mirrors _meta, Mcp-Method the method, Mcp-Name the name, uri or
	// taskId (wire.NameSource).
	h.Set(wire.HeaderProtocolVersion, m.ProtocolVersion)
	if m.Kind == wire.KindRequest {
		h.Set(wire.HeaderMethod, m.Method)
	}
	if name, ok := m.NameValue(); ok {
		h.Set(wire.HeaderName, wire.EncodeHeaderValue(name))
	}
	if m.Method == "tools/call" {
		r.tools.paramHeaders(m, h)
	}
	return h
}

// toolCache holds the x-mcp-header bindings of the remote's tools, learnt
// from the tools/list results that pass through.
type toolCache struct {
	mu       sync.Mutex
	bindings map[string][]wire.ParamBinding
	support  tasks.ToolSupport // a legacy remote's tools' execution.taskSupport (connect's tasks_eras.go)
}

// paramHeaders adds the Mcp-Param-* headers a tools/call needs
// (streamable-http §Custom headers from tool parameters: clients "MUST
// mirror the designated parameter values into HTTP headers").
func (t *toolCache) paramHeaders(m *wire.Message, h http.Header) {
	t.mu.Lock()
	bs := t.bindings[m.Name]
	t.mu.Unlock()
	if len(bs) == 0 {
		return
	}
	var args []byte
	if m.Arguments.Present() {
		args = m.Bytes(m.Arguments)
	}
	vals, present, err := wire.ParamValues(args, bs)
	if err != nil {
		return
	}
	for i, bnd := range bs {
		if present[i] {
			h.Set(wire.HeaderParamPrefix+bnd.Header, wire.EncodeHeaderValue(vals[i]))
		}
	}
}

// absorb records the bindings of a tools/list result and returns the
// result the host sees: tools whose x-mcp-header annotations break the
// spec's rules are removed ("Rejection means the client MUST exclude the
// invalid tool from the result of tools/list").
func (t *toolCache) absorb(r *Remote, m *wire.Message) []byte {
	tools, ok := wire.Field(m.Raw, m.Result, "tools")
	if !ok {
		return m.Raw
	}
	elems, err := wire.Elements(m.Raw, tools)
	if err != nil {
		return m.Raw
	}
	kept := elems[:0:0]
	found := map[string][]wire.ParamBinding{}
	for _, e := range elems {
		name, _ := wire.StringField(m.Raw, e, "name")
		var bs []wire.ParamBinding
		if schema, ok := wire.Field(m.Raw, e, "inputSchema"); ok {
			bs, err = wire.ToolBindings(m.Bytes(schema))
			if err != nil {
				r.warns.badTool.Event(&r.log, zerolog.WarnLevel).Str("tool", name).Err(err).Msg("tool removed from tools/list: invalid x-mcp-header annotation")
				continue
			}
		}
		found[name] = bs
		kept = append(kept, e)
	}
	t.mu.Lock()
	if t.bindings == nil {
		t.bindings = map[string][]wire.ParamBinding{}
	}
	for k, v := range found {
		t.bindings[k] = v
	}
	t.mu.Unlock()
	if len(kept) == len(elems) {
		return m.Raw
	}
	var arr bytes.Buffer
	arr.WriteByte('[')
	for i, e := range kept {
		if i > 0 {
			arr.WriteByte(',')
		}
		arr.Write(m.Bytes(e))
	}
	arr.WriteByte(']')
	return wire.Splice(m.Raw, wire.Edit{Span: tools, Value: arr.Bytes()})
}

// refresh re-lists the tools after a HeaderMismatch on call, with call's
// own _meta, and reports whether the retry may proceed.
func (t *toolCache) refresh(ctx context.Context, r *Remote, call *wire.Message) bool {
	if !call.Meta.Present() {
		return false
	}
	id := r.MintID("tools")
	params := append(append([]byte(`{"_meta":`), call.Bytes(call.Meta)...), '}')
	body := wire.Request(id, "tools/list", params)
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		return false
	}
	resp, err := r.client.Post(ctx, body, r.HeadersFor(&m))
	if err != nil {
		return false
	}
	defer resp.Close()
	rm, err := AwaitResponse(resp, id, nil)
	if err != nil || !rm.Result.Present() {
		return false
	}
	t.absorb(r, rm)
	return true
}

// AbsorbTools records the x-mcp-header bindings of a tools/list result
// (m) and returns the result the host sees (toolCache.absorb).
func (r *Remote) AbsorbTools(m *wire.Message) []byte { return r.tools.absorb(r, m) }

// ToolSupport is the legacy remote's tools' execution.taskSupport, learnt
// from the tools/list results the host side notes in it.
func (r *Remote) ToolSupport() *tasks.ToolSupport { return &r.tools.support }
