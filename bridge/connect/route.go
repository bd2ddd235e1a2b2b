package connect

import (
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Everything the remote sends passes through route, which keeps the one
// promise the host relies on: each of its requests is answered exactly
// once, and every line on stdout is one JSON-RPC message. The remote is not
// trusted with that. bridge/remote hands over one JSON message at a time
// (a batch split: remote/batch.go); a response is delivered only if it
// answers a request of the stream that carried it (or, on the GET stream,
// where a server may resume a request's stream, one in flight); a response
// to an id nobody sent, to a request of another stream, or a second
// response to the same request is dropped (logged at debug).

// source is where a message from the remote came from, which decides what
// a response there may answer.
type source struct {
	p     *pending   // a request's own response stream
	batch []*pending // the response to a host batch: its requests
	get   bool       // the standalone GET stream: any request in flight
	// none of them: the response to a POSTed notification or response,
	// which answers nothing.
}

// exchange is where one host request's traffic goes: the remote's messages
// on the request's response stream, and the host's cancellation of it. It
// is set when the request is dispatched (setExchange): pass-through (pass),
// era detection (detecting), or a translating call, which answers the host
// its own way (modernhost_call.go, legacyhost.go, the listen request), so
// route and notify never ask which it is.
type exchange interface {
	// final takes p's final response, once per wire id of p (takeFinal).
	final(p *pending, m *wire.Message)
	// other takes every other message on p's response stream.
	other(p *pending, msg []byte, m *wire.Message)
	// cancelled takes the host's notifications/cancelled of p on the stdin
	// loop, or reports false for the default (Bridge.notify): a modern
	// request's stream is closed, a legacy one's cancellation forwarded.
	cancelled(p *pending) bool
}

// pass relays a request's answer as the remote sent it.
type pass struct{ b *Bridge }

func (pass) cancelled(*pending) bool { return false }
func (x pass) other(p *pending, msg []byte, m *wire.Message) {
	if p.cancelled.Load() && m.Kind == wire.KindNotification {
		return // nothing more for a cancelled request
	}
	x.b.host.Write(msg)
}

// final writes p's response as the remote sent it.
func (x pass) final(p *pending, m *wire.Message) {
	b, msg := x.b, m.Raw
	switch {
	case p.method == "initialize" && m.Result.Present():
		b.remote.InitializeResult(m)
	case p.method == "tools/list" && m.Result.Present():
		msg = b.remote.AbsorbTools(m)
	}
	b.writeFinalOf(p, msg, m)
}

// setExchange sends p to the remote as wid (a new id each round of a
// translated call), its traffic going to ex. A response on the GET stream
// (final, pendingByWireID) and the host's cancellation read them from
// other goroutines.
func (b *Bridge) setExchange(p *pending, wid []byte, ex exchange) {
	b.mu.Lock()
	p.wireID, p.ex = wid, ex
	b.mu.Unlock()
}

// route handles one message from the remote (bridge/remote hands them
// one at a time, checked to be JSON, a batch split) and reports whether it
// carried the final response of src.p.
func (b *Bridge) route(msg []byte, src source) (final bool) {
	if src.p == nil && src.batch == nil && b.strategy().unasked(msg) {
		return false
	}
	var m wire.Message
	if err := wire.Parse(msg, &m); err != nil {
		b.warns.badMessage.Event(&b.log, zerolog.WarnLevel).Err(err).Int("bytes", len(msg)).Msg("remote sent something that is not a JSON-RPC message; dropped")
		return false
	}
	if m.Kind == wire.KindResponse {
		return b.routeResponse(&m, src)
	}
	if p := src.p; p != nil {
		p.ex.other(p, msg, &m) // p's own goroutine set p.ex
		return false
	}
	b.host.Write(msg)
	return false
}

// routeResponse delivers a response to the request of src it answers, if
// any, and reports whether it was src.p's final response.
func (b *Bridge) routeResponse(m *wire.Message, src source) bool {
	id := m.IDBytes()
	switch {
	case src.p != nil:
		p := src.p
		wid := b.wireIDOf(p)
		if string(id) == "null" && m.Error.Present() {
			// JSON-RPC 2.0 §5: a server that could not read a request's id
			// answers with a null one. On the request's own stream, this
			// request is the only one it can be about.
			var am wire.Message
			if wire.Parse(wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: wid}), &am) == nil {
				m, id = &am, wid
			}
		}
		if string(id) != string(wid) {
			b.dropResponse(m, "it does not answer the request whose stream carried it")
			return false
		}
		b.final(p, m)
		return true
	case src.batch != nil:
		for _, q := range src.batch {
			if string(q.wireID) == string(id) {
				b.final(q, m)
				return false
			}
		}
		b.dropResponse(m, "it answers no request of the batch whose stream carried it")
	case src.get:
		// A server may answer a request on the GET stream after resuming
		// its stream there (found with real servers): it still completes
		// that request, exactly once, and ends the request's own stream.
		q := b.pendingByWireID(id)
		if q == nil || q.cancelled.Load() {
			b.dropResponse(m, "it answers no request in flight")
			return false
		}
		if b.final(q, m) {
			q.cancelled.Store(true)
			q.cancel()
		}
	default:
		b.dropResponse(m, "it came on the stream of a notification or response, which answers nothing")
	}
	return false
}

func (b *Bridge) dropResponse(m *wire.Message, why string) {
	if e := b.log.Debug(); e.Enabled() {
		e.RawJSON("id", m.IDBytes()).Str("reason", why).Msg("dropping a response from the remote")
	}
}

// final hands p its final response (to p's exchange). It happens once per
// wire id of p, whichever stream the response comes on: finalFor claims the
// response to p's current wire id. It reports whether it happened.
func (b *Bridge) final(p *pending, m *wire.Message) bool {
	if p.cancelled.Load() {
		return false
	}
	b.mu.Lock()
	taken, ex := p.finalFor != nil && string(p.finalFor) == string(p.wireID), p.ex
	p.finalFor = p.wireID
	b.mu.Unlock()
	if taken {
		b.dropResponse(m, "its request already has its response")
		return false
	}
	ex.final(p, m)
	return true
}

func (b *Bridge) wireIDOf(p *pending) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return p.wireID
}

// pendingByWireID finds the in-flight request the remote knows by id. A
// scan, not a second index: only a response that strayed from its own
// stream (GET stream) comes here, and the wire id of a translated request
// changes at several places an index would have to follow.
func (b *Bridge) pendingByWireID(id []byte) *pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.inflight {
		if string(p.wireID) == string(id) {
			return p
		}
	}
	return nil
}

// writeFinal writes p's answer to the host, unless the host cancelled p or
// p was answered already.
func (b *Bridge) writeFinal(p *pending, body []byte) { b.writeFinalOf(p, body, nil) }

// writeFinalOf is writeFinal of a body whose outcome m already reads (the
// remote's response it was made from), so telemetry need not parse it
// again; nil: it does.
func (b *Bridge) writeFinalOf(p *pending, body []byte, m *wire.Message) {
	if p.cancelled.Load() {
		return
	}
	if !p.replied.CompareAndSwap(false, true) {
		b.log.Debug().Str("method", p.method).RawJSON("id", p.id).Msg("dropping a second answer to a request")
		return
	}
	if p.method == "tools/list" {
		body, m = b.filterTools(body, m)
	}
	b.observeFinal(p, body, m)
	b.host.Write(body)
}
