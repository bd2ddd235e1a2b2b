package connect

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// headersFor derives the HTTP headers a message needs from its body.
func (b *Bridge) headersFor(m *wire.Message) http.Header {
	if !m.IsModern() {
		if m.Method == "initialize" {
			return http.Header{}
		}
		return b.sess.header()
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
		b.tools.paramHeaders(m, h)
	}
	return h
}

// toolCache holds the x-mcp-header bindings of the remote's tools, learnt
// from the tools/list results that pass through.
type toolCache struct {
	mu       sync.Mutex
	bindings map[string][]wire.ParamBinding
	support  tasks.ToolSupport // a legacy remote's tools' execution.taskSupport (tasks_eras.go)
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
func (t *toolCache) absorb(b *Bridge, m *wire.Message) []byte {
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
				b.warns.badTool.Event(&b.log, zerolog.WarnLevel).Str("tool", name).Err(err).Msg("tool removed from tools/list: invalid x-mcp-header annotation")
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
func (t *toolCache) refresh(ctx context.Context, b *Bridge, call *wire.Message) bool {
	if !call.Meta.Present() {
		return false
	}
	id := b.mintID("tools")
	params := append(append([]byte(`{"_meta":`), call.Bytes(call.Meta)...), '}')
	body := wire.Request(id, "tools/list", params)
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		return false
	}
	resp, err := b.client.Post(ctx, body, b.headersFor(&m))
	if err != nil {
		return false
	}
	defer resp.Close()
	r, err := awaitResponse(resp, id, nil)
	if err != nil || !r.Result.Present() {
		return false
	}
	t.absorb(b, r)
	return true
}

// relayListen keeps a 2026-07-28 subscriptions/listen stream open for the
// host. A broken stream loses the request and "clients MUST re-issue it as a
// new request with a new request ID" (2026-07-28 changelog), so the bridge
// re-issues it under an id of its own and maps the subscription id back:
// the host keeps seeing its own id on every notification.
func (b *Bridge) relayListen(ctx context.Context, p *pending, m *wire.Message) {
	bo := listenBackoff()
	// The stream lives until the host cancels it or leaves.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(b.streamCtx, cancel)
	defer stop()
	hdr := b.headersFor(m)
	body, id := m.Raw, p.id
	for attempt := 0; ; attempt++ {
		resp, err := b.client.Post(ctx, body, hdr)
		if err != nil {
			if attempt == 0 || ctx.Err() != nil {
				if ctx.Err() == nil {
					b.fail(p, err, nil)
				}
				return
			}
		} else {
			delivered, final := b.listenStream(resp, p, id, attempt > 0)
			resp.Close()
			if final || ctx.Err() != nil {
				return
			}
			if delivered {
				bo.Reset()
			}
		}
		wait := bo.NextBackOff()
		b.warns.listenBroke.Event(&b.log, zerolog.InfoLevel).Int64("in_ms", wait.Milliseconds()).Msg("subscriptions/listen stream broke; re-establishing")
		if !sleepCtx(ctx, wait) {
			return
		}
		id = b.mintID("listen")
		body = wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: id})
	}
}

// listenStream relays one listen response stream whose request carried id,
// rewriting the subscription id to the host's. A re-established stream's
// acknowledgement is not repeated to the host.
func (b *Bridge) listenStream(resp interface{ Next() ([]byte, error) }, p *pending, id []byte, again bool) (delivered, final bool) {
	for {
		msg, err := resp.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				b.log.Debug().Err(err).Msg("listen stream read")
			}
			return delivered, false
		}
		var m wire.Message
		if !b.remoteJSON(msg) || wire.Parse(msg, &m) != nil {
			continue
		}
		delivered = true
		switch {
		case m.Kind == wire.KindResponse && string(m.IDBytes()) != string(id):
			b.dropResponse(&m, "it does not answer the subscriptions/listen whose stream carried it")
		case m.Kind == wire.KindResponse:
			edits := []wire.Edit{{Span: m.ID, Value: p.id}}
			if meta, ok := wire.Field(msg, m.Result, "_meta"); ok {
				if sub, ok := wire.Field(msg, meta, wire.MetaSubscriptionID); ok {
					edits = append(edits, wire.Edit{Span: sub, Value: p.id})
				}
			}
			b.writeFinal(p, wire.Splice(msg, edits...))
			return true, true
		case m.SubscriptionID.Present():
			if again && m.Method == "notifications/subscriptions/acknowledged" {
				continue
			}
			b.write(wire.Splice(msg, wire.Edit{Span: m.SubscriptionID, Value: p.id}))
		default:
			b.write(msg)
		}
	}
}
