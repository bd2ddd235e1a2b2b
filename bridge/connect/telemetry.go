package connect

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// observe begins the telemetry of one host request (a CLIENT span and the
// mcp.client.operation.duration sample) and returns the message to send
// on: m, its params._meta edited in place to name the span as the remote's
// parent (the caller's m is its own: nothing reads the message as the host
// sent it after this), or untouched when telemetry is off or the remote
// gets nothing new.
func (b *Bridge) observe(p *pending, m *wire.Message) *wire.Message {
	if b.tel == nil {
		return m
	}
	meta := telemetry.ReadMeta(m)
	version := m.ProtocolVersion
	if version == "" {
		version = b.remote.Negotiated()
	}
	op := b.tel.Begin(&telemetry.Request{
		Method: m.Method, Name: m.Name, ID: m.IDBytes(), Version: version, Start: p.started,
		MetaParent: meta.Parent, MetaState: meta.State,
	})
	p.op.Store(op)
	return op.Relay(m, meta)
}

// observeFinal reads the answer the host gets for p (its error code, or a
// tool's isError): from m when the caller has it read, else from body.
func (b *Bridge) observeFinal(p *pending, body []byte, m *wire.Message) {
	op := p.op.Load()
	if op == nil {
		return
	}
	if m != nil {
		op.Result(m)
		return
	}
	var read wire.Message
	if wire.Parse(body, &read) == nil {
		op.Result(&read)
	}
}

// endObserved records p's duration and ends its span.
func endObserved(p *pending) {
	if op := p.op.Load(); op != nil {
		if p.cancelled.Load() {
			op.Fail("cancelled", "the host cancelled the request")
		}
		op.End()
	}
}
