package connect

import (
	"context"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// With --protocol auto the bridge starts out passing the host's messages
// through, and switches to translation when the remote's answer shows it
// lacks the host's era. What an answer shows, and what to do about it
// (pass it on, settle the era, hold it back and probe, switch), is
// translate's (Decide and Observe, one machine for both faces); this file
// turns HTTP outcomes into its evidence, sends the probe and carries out
// the step. The evidence, per direction:
//
//   - a legacy host's initialize (or the notifications/initialized after
//     it, or a first request) is refused with 400/404/405, or the
//     initialize is answered with a JSON-RPC error: the bridge probes
//     server/discover, and a modern verdict switches the session to
//     translation (a modern-only Go SDK server even answers initialize,
//     with 2025-11-25, and then refuses every request carrying that
//     version);
//   - a modern host's request is refused with -32022 naming only 2025
//     versions, or its server/discover lists only 2025 versions (both what
//     a stateful Go SDK server does), or it is refused with 400/404/405 and
//     a body that is no modern error, confirmed by a probe, or answered
//     with a result in 2025 shape (no resultType, as supergateway 4.0.0
//     does), also confirmed by a probe.
//
// 401/403 are an authorization problem and 5xx/timeouts an outage: no
// evidence, nothing cached, the host sees the error.

// detecting is the exchange of a pass-through request under detection:
// translate.Observe says whether its answer is passed on (and settles the
// era), held back while a probe asks the remote, or dropped because the
// remote lacks the host's era (the request goes again in translation).
type detecting struct {
	pass
	eraHint verdict // what the answer revealed of the remote's era
	held    []byte  // the answer (a legacy initialize's in-band error, say), held back while the era is probed
}

func (x *detecting) final(p *pending, m *wire.Message) {
	d, step := translate.Observe(translate.ResponseEvidence(p.method, p.modern, m))
	switch step {
	case translate.StepHold:
		x.held = clone(m.Raw)
		return
	case translate.StepSwitch:
		x.eraHint = d.Era
		return
	case translate.StepSettle:
		x.b.remote.SetVerdict(d.Era)
	}
	x.pass.final(p, m)
}

// translateAfter looks at the outcome of a pass-through request under
// detection (d, its exchange) and, when it shows the remote lacks the host's era, switches
// the session to translation and answers p that way. It reports whether it
// answered p.
func (b *Bridge) translateAfter(ctx context.Context, p *pending, d *detecting, m *wire.Message, err error) bool {
	if p.cancelled.Load() || b.protocol() != ProtocolAuto {
		return false
	}
	if !b.passingThrough() {
		// Another request settled the era meanwhile.
		return b.retranslate(ctx, p, d, m, err)
	}
	v, step := b.evidenceOf(p, d, m, err)
	var init []byte
	var pr probeResult
	if step == translate.StepHold {
		// Weak evidence (the shape of one answer, a refusal naming no
		// version: a gateway may say 404 for other reasons): the probe
		// decides, asked with the host's capabilities and identity. A held
		// answer is kept, not the request sent again (a tools/call may
		// have had effects).
		if p.modern {
			caps, _ := wire.Field(m.Raw, m.Meta, wire.MetaClientCapabilities)
			info, _ := wire.Field(m.Raw, m.Meta, wire.MetaClientInfo)
			pr, step = b.probeHost(ctx, spanBytes(m, caps), spanBytes(m, info), true)
		} else {
			if init = b.remote.Handshake(); m.Method == "initialize" {
				init = m.Raw
			}
			caps, info := handshakeOf(init)
			pr, step = b.probeHost(ctx, caps, info, false)
		}
	} else if step != translate.StepPass {
		b.remote.SetVerdict(v)
	}
	switch {
	case step == translate.StepSwitch && p.modern:
		b.switchMode(b.modernHostMode())
		if d.held == nil {
			b.mh.relay(ctx, p, m)
			return true
		}
	case step == translate.StepSwitch:
		b.switchMode(b.legacyHostMode())
		b.lh.adopt(init, pr)
		b.resetWire(p, true)
		if m.Method == "initialize" {
			b.lh.answerInitialize(p)
		} else {
			b.lh.relay(ctx, p, m)
		}
		return true
	case d.held == nil:
		return false
	}
	b.writeHeld(p, d, m)
	return true
}

// evidenceOf is what p's outcome says of the remote: what its final
// response showed (detecting: an era hint, or an answer held back), or
// the HTTP error it ended with.
func (b *Bridge) evidenceOf(p *pending, d *detecting, m *wire.Message, err error) (verdict, translate.Step) {
	switch {
	case d.eraHint != verdictUnknown:
		return d.eraHint, translate.StepSwitch
	case d.held != nil:
		return verdictUnknown, translate.StepHold
	}
	dec, step, se := remote.ObserveErr(err, m.Method, p.modern)
	if step == translate.StepHold && !p.modern && se.StatusCode == http.StatusNotFound && b.remote.SessionID() != "" {
		return verdictUnknown, translate.StepPass // a session that expired
	}
	return dec.Era, step
}

// retranslate runs p again in the translation mode another request chose,
// if p failed in a way that mode explains.
func (b *Bridge) retranslate(ctx context.Context, p *pending, d *detecting, m *wire.Message, err error) bool {
	if p.modern && d.held != nil {
		b.writeHeld(p, d, m)
		return true
	}
	if _, ok := remote.Refusal(err); !ok && d.eraHint != verdictLegacy && d.held == nil {
		return false
	}
	b.relay(ctx, p, m)
	return true
}

// writeHeld answers the host's request with the answer held back for it,
// as the strategy in force has it.
func (b *Bridge) writeHeld(p *pending, d *detecting, m *wire.Message) {
	b.strategy().writeHeld(p, d.held, m.Method)
}

// resetWire undoes what a pass-through attempt set on p, and records the
// era p goes to the remote in.
func (b *Bridge) resetWire(p *pending, modern bool) {
	b.mu.Lock()
	p.wireID, p.wireModern = p.id, modern
	p.ex, p.finalFor = pass{b}, nil
	b.mu.Unlock()
}

// probeHost probes the remote with a host's capabilities and identity,
// records the verdict, and says what it means for a host of that era
// (translate.Settle; StepPass when the probe got no answer).
func (b *Bridge) probeHost(ctx context.Context, caps, info []byte, modern bool) (probeResult, translate.Step) {
	pr, err := b.remote.Probe(ctx, caps, info)
	if err != nil {
		return pr, translate.StepPass
	}
	b.remote.SetVerdict(pr.Verdict)
	return pr, translate.Settle(pr.Verdict, modern)
}

func spanBytes(m *wire.Message, s wire.Span) []byte {
	if !s.Present() {
		return nil
	}
	return m.Bytes(s)
}

// legacyHostRejected handles a refused notifications/initialized: a
// modern-only Go SDK server answers the legacy initialize, then refuses
// everything else. It reports whether the session switched to translation.
func (b *Bridge) legacyHostRejected(ctx context.Context, err error) bool {
	if !b.detectable() {
		return false
	}
	if _, step, _ := remote.ObserveErr(err, "notifications/initialized", false); step != translate.StepHold {
		return false
	}
	init := b.remote.Handshake()
	caps, info := handshakeOf(init)
	pr, step := b.probeHost(ctx, caps, info, false)
	if step != translate.StepSwitch {
		return false
	}
	b.switchMode(b.legacyHostMode())
	b.lh.adopt(init, pr)
	b.lh.onInitialized()
	return true
}

// handshakeOf reads the capabilities and identity a legacy host declared
// in its initialize (init, raw; nil before one).
func handshakeOf(init []byte) (caps, info []byte) {
	var m wire.Message
	if init == nil || wire.Parse(init, &m) != nil {
		return nil, nil
	}
	_, caps, info = translate.InitializeOf(&m)
	return caps, info
}
