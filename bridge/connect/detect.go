package connect

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// With --protocol auto the bridge starts out passing the host's messages
// through, and switches to translation when the remote's answer shows it
// lacks the host's era. What an answer shows is translate.Decide's (one
// rule set for both faces); this file turns HTTP outcomes into its
// evidence and acts on the verdict. The evidence, per direction:
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

// detectFinal is the final-response hook of a pass-through request under
// detection: it holds back the answers that reveal the remote lacks the
// host's era, and records a verdict from the ones that show it has it.
// translate.Decide reads the answer; weak evidence against the host's era
// is held back while a probe asks the remote, weak evidence for it proves
// nothing yet.
func (b *Bridge) detectFinal(p *pending) func(m *wire.Message) {
	return func(m *wire.Message) {
		d := translate.Decide(translate.ResponseEvidence(p.method, p.modern, m))
		switch {
		case d.Confirm && d.Era != hostEra(p.modern):
			p.held = clone(m.Raw)
			return
		case d.Confirm:
		case d.Era == verdictLegacy && p.modern:
			p.eraHint = verdictLegacy
			return
		case d.Era != verdictUnknown:
			b.setVerdict(d.Era)
		}
		b.passFinal(p, m)
	}
}

// hostEra is the era of a host request.
func hostEra(modern bool) verdict {
	if modern {
		return verdictModern
	}
	return verdictLegacy
}

// refusal reports whether err is an HTTP refusal that may be an era
// mismatch (400/404/405), as opposed to auth trouble or an outage.
func refusal(err error) (*httpclient.StatusError, bool) {
	var se *httpclient.StatusError
	if !errors.As(err, &se) {
		return nil, false
	}
	switch se.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return se, true
	}
	return se, false
}

// decideErr judges the error a request to the remote ended with: only an
// HTTP status answer is evidence (a refusal, weakly); se is nil otherwise.
func decideErr(err error, method string, modern bool) (translate.Decision, *httpclient.StatusError) {
	var se *httpclient.StatusError
	if !errors.As(err, &se) {
		return translate.Decision{}, nil
	}
	return translate.Decide(statusEvidence(se, method, modern)), se
}

// translateAfter looks at the outcome of a pass-through request under
// detection and, when it shows the remote lacks the host's era, switches
// the session to translation and answers p that way. It reports whether it
// answered p.
func (b *Bridge) translateAfter(ctx context.Context, p *pending, m *wire.Message, err error) bool {
	if p.cancelled.Load() || b.protocol() != ProtocolAuto {
		return false
	}
	if b.currentMode() != modePass {
		// Another request settled the era meanwhile.
		return b.retranslate(ctx, p, m, err)
	}
	if p.modern {
		return b.modernHostRejected(ctx, p, m, err)
	}
	return b.legacyHostRejectedRequest(ctx, p, m, err)
}

// retranslate runs p again in the translation mode another request chose,
// if p failed in a way that mode explains.
func (b *Bridge) retranslate(ctx context.Context, p *pending, m *wire.Message, err error) bool {
	if p.modern && p.held != nil {
		b.writeHeld(p, m)
		return true
	}
	if _, ok := refusal(err); !ok && p.eraHint != verdictLegacy && p.held == nil {
		return false
	}
	b.relay(ctx, p, m)
	return true
}

// writeHeld answers a modern host's request with the 2025-shaped result
// held back for it: completed the way translation completes every result
// when the remote proved 2025-only, as it came otherwise.
func (b *Bridge) writeHeld(p *pending, m *wire.Message) {
	var hm wire.Message
	if b.currentMode() == modeModernHost && wire.Parse(p.held, &hm) == nil {
		b.writeFinal(p, translate.Complete(&hm, m.Method, p.id))
		return
	}
	b.writeFinal(p, p.held)
}

// resetWire undoes what a pass-through attempt set on p, and records the
// era p goes to the remote in.
func (b *Bridge) resetWire(p *pending, modern bool) {
	b.mu.Lock()
	p.wireID, p.wireModern = p.id, modern
	p.final, p.other, p.finalFor = nil, nil, nil
	b.mu.Unlock()
	p.detect, p.eraHint, p.held = false, verdictUnknown, nil
}

// modernHostRejected handles a modern host's request that a legacy-only
// remote may have refused, or answered in 2025 shape (held).
func (b *Bridge) modernHostRejected(ctx context.Context, p *pending, m *wire.Message, err error) bool {
	v := p.eraHint
	if v == verdictUnknown && p.held != nil {
		// The shape of one answer is no verdict on the remote: the probe
		// decides. The request was carried out either way, so its answer
		// is kept, not the request sent again (a tools/call may have
		// effects).
		switch b.probeModernHost(ctx, m) {
		case verdictLegacy:
			b.setVerdict(verdictLegacy)
			b.switchMode(modeModernHost)
		case verdictModern:
			b.setVerdict(verdictModern)
		}
		b.writeHeld(p, m)
		return true
	}
	if v == verdictUnknown && err != nil {
		se, ok := refusal(err)
		if !ok {
			return false
		}
		d := translate.Decide(statusEvidence(se, m.Method, true))
		v = d.Era
		if d.Confirm {
			// A refusal without a version list is weak evidence (a
			// gateway may say 404 for other reasons): the probe decides.
			if v = b.probeModernHost(ctx, m); v == verdictUnknown {
				return false
			}
		}
	}
	switch v {
	case verdictModern:
		b.setVerdict(verdictModern)
		return false
	case verdictLegacy:
		b.setVerdict(verdictLegacy)
		b.switchMode(modeModernHost)
		b.mh.relay(ctx, p, m)
		return true
	}
	return false
}

// probeModernHost probes with the capabilities and identity of a modern
// host's request; verdictUnknown when the probe got no answer.
func (b *Bridge) probeModernHost(ctx context.Context, m *wire.Message) verdict {
	caps, _ := wire.Field(m.Raw, m.Meta, wire.MetaClientCapabilities)
	info, _ := wire.Field(m.Raw, m.Meta, wire.MetaClientInfo)
	pr, err := b.probe(ctx, spanBytes(m, caps), spanBytes(m, info))
	if err != nil {
		return verdictUnknown
	}
	return pr.verdict
}

func spanBytes(m *wire.Message, s wire.Span) []byte {
	if !s.Present() {
		return nil
	}
	return m.Bytes(s)
}

// legacyHostRejectedRequest handles a legacy host's request (its initialize
// above all) that a modern-only remote may have refused.
func (b *Bridge) legacyHostRejectedRequest(ctx context.Context, p *pending, m *wire.Message, err error) bool {
	if p.held == nil {
		d, se := decideErr(err, m.Method, false)
		if d.Era != verdictModern || (se.StatusCode == http.StatusNotFound && b.client.SessionID() != "") {
			return false // no evidence, or a session that expired
		}
	}
	init := b.sess.handshake()
	if m.Method == "initialize" {
		init = m.Raw
	}
	pr, perr := b.probeFor(ctx, init)
	if perr != nil || pr.verdict != verdictModern {
		if perr == nil {
			b.setVerdict(pr.verdict)
		}
		if p.held != nil {
			b.writeFinal(p, p.held)
			return true
		}
		return false
	}
	b.setVerdict(verdictModern)
	b.switchMode(modeLegacyHost)
	b.lh.adopt(init, pr)
	b.resetWire(p, true)
	if m.Method == "initialize" {
		b.lh.answerInitialize(p)
		return true
	}
	b.lh.relay(ctx, p, m)
	return true
}

// legacyHostRejected handles a refused notifications/initialized: a
// modern-only Go SDK server answers the legacy initialize, then refuses
// everything else. It reports whether the session switched to translation.
func (b *Bridge) legacyHostRejected(ctx context.Context, err error) bool {
	if !b.detectable() {
		return false
	}
	if d, _ := decideErr(err, "notifications/initialized", false); d.Era != verdictModern {
		return false
	}
	init := b.sess.handshake()
	pr, perr := b.probeFor(ctx, init)
	if perr != nil || pr.verdict != verdictModern {
		if perr == nil {
			b.setVerdict(pr.verdict)
		}
		return false
	}
	b.setVerdict(verdictModern)
	b.switchMode(modeLegacyHost)
	b.lh.adopt(init, pr)
	b.lh.onInitialized()
	return true
}

// probeFor probes with the capabilities and identity of the host's
// initialize.
func (b *Bridge) probeFor(ctx context.Context, init []byte) (probeResult, error) {
	hs := parseHandshake(init)
	return b.probe(ctx, hs.caps, hs.info)
}

// handshake is what the bridge keeps of a legacy host's initialize.
type handshake struct {
	version string
	caps    []byte // params.capabilities, raw
	info    []byte // params.clientInfo, raw
}

func parseHandshake(init []byte) handshake {
	var hs handshake
	var m wire.Message
	if init == nil || wire.Parse(init, &m) != nil {
		return hs
	}
	hs.version, _ = wire.StringField(m.Raw, m.Params, "protocolVersion")
	if sp, ok := wire.Field(m.Raw, m.Params, "capabilities"); ok && m.Raw[sp.Start] == '{' {
		hs.caps = clone(m.Bytes(sp))
	}
	if sp, ok := wire.Field(m.Raw, m.Params, "clientInfo"); ok && m.Raw[sp.Start] == '{' {
		hs.info = clone(m.Bytes(sp))
	}
	return hs
}
