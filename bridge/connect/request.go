package connect

import (
	"context"
	"errors"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// relay sends one host request and writes everything the remote sends back
// for it. It always ends with exactly one response to the host, unless the
// host cancelled the request.
func (b *Bridge) relay(ctx context.Context, p *pending, m *wire.Message) {
	p.b = b
	if b.refuseHidden(p, m) {
		return
	}
	b.strategy().relay(ctx, p, m)
}

// passRelay relays a host request as it is (passThrough), watching its
// answer for the remote's era while that is unknown.
func (b *Bridge) passRelay(ctx context.Context, p *pending, m *wire.Message) {
	if m.Method == "subscriptions/listen" && p.modern {
		b.relayListen(ctx, p, m)
		return
	}
	ctx, cancel := b.host.RequestCtx(ctx)
	defer cancel()
	if m.Method == "initialize" {
		b.remote.BeforeInitialize(m)
	}
	var d *detecting
	if b.detectable() {
		d = &detecting{pass: pass{b}}
		b.setExchange(p, p.wireID, d)
	}
	err := b.remote.Forward(ctx, p, m)
	if d != nil && b.translateAfter(ctx, p, d, m, err) {
		return
	}
	if err != nil {
		b.answerError(p, err)
	}
}

// p is the remote side's remote.Call while remote.Forward sends it: the
// wire id and era are read on the request's own goroutine, and the
// messages of its response stream go to route (Emit: whether one carried
// p's final response).
func (p *pending) Wire() (id []byte, modern bool) { return p.wireID, p.wireModern }
func (p *pending) Cancelled() bool                { return p.cancelled.Load() }
func (p *pending) Emit(msg []byte) bool           { return p.b.route(msg, source{p: p}) }
func (p *pending) HeaderRetry() *bool             { return &p.headerRetry }

// answerError answers p with the remote's own JSON-RPC error when the HTTP
// error carried one for this request (a 2026-07-28 server answers 400
// -32020, 404 -32601 this way: the server's own words beat a paraphrase),
// and with a description of err otherwise.
func (b *Bridge) answerError(p *pending, err error) {
	if se, ok := err.(*httpclient.StatusError); ok {
		if body := remote.ForwardableError(se, p.wireID); body != nil {
			b.writeFinal(p, b.hostID(p, body))
			return
		}
	}
	var se *httpclient.StatusError
	errors.As(err, &se)
	b.fail(p, err, se)
}

// hostID returns msg, a response to p as the remote numbered it, with the
// host's id.
func (b *Bridge) hostID(p *pending, msg []byte) []byte {
	if string(p.wireID) == string(p.id) {
		return msg
	}
	var m wire.Message
	if wire.Parse(msg, &m) != nil || !m.ID.Present() {
		return msg
	}
	return wire.Splice(msg, wire.Edit{Span: m.ID, Value: p.id})
}

// fail answers p with a JSON-RPC error describing err.
func (b *Bridge) fail(p *pending, err error, se *httpclient.StatusError) {
	if p.cancelled.Load() || p.replied.Load() {
		return
	}
	code, msg, data := b.remote.Describe(err, se)
	b.log.Warn().Str("method", p.method).RawJSON("id", p.id).Err(err).Msg("request failed")
	b.writeFinal(p, wire.ErrorResponse(p.id, code, msg, data))
}

// relayListen keeps a 2026-07-28 subscriptions/listen stream open for the
// host (remote.Remote.Relisten re-issues a broken one under an id of the
// bridge's own), and maps the subscription id back: the host keeps seeing
// its own id on every notification.
func (b *Bridge) relayListen(ctx context.Context, p *pending, m *wire.Message) {
	// The stream lives until the host cancels it or leaves.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(b.streamCtx, cancel)
	defer stop()
	err := b.remote.Relisten(ctx, m, func(msg []byte, m *wire.Message, id []byte, again bool) bool {
		return b.listenMessage(msg, m, p, id, again)
	})
	if err != nil {
		b.fail(p, err, nil)
	}
}

// listenMessage relays one message of a listen response stream whose
// request carried id, rewriting the subscription id to the host's, and
// reports whether it was the final response. A re-established stream's
// acknowledgement is not repeated to the host.
func (b *Bridge) listenMessage(msg []byte, m *wire.Message, p *pending, id []byte, again bool) (final bool) {
	switch {
	case m.Kind == wire.KindResponse && string(m.IDBytes()) != string(id):
		b.dropResponse(m, "it does not answer the subscriptions/listen whose stream carried it")
	case m.Kind == wire.KindResponse:
		edits := []wire.Edit{{Span: m.ID, Value: p.id}}
		if meta, ok := wire.Field(msg, m.Result, "_meta"); ok {
			if sub, ok := wire.Field(msg, meta, wire.MetaSubscriptionID); ok {
				edits = append(edits, wire.Edit{Span: sub, Value: p.id})
			}
		}
		b.writeFinal(p, wire.Splice(msg, edits...))
		return true
	case m.SubscriptionID.Present():
		if again && m.Method == "notifications/subscriptions/acknowledged" {
			return false
		}
		b.host.Write(wire.Splice(msg, wire.Edit{Span: m.SubscriptionID, Value: p.id}))
	default:
		b.host.Write(msg)
	}
	return false
}
