package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The remote's era decides whether the bridge passes messages through or
// translates them. Translation is only needed when host and remote speak
// different eras, so detection happens lazily, on evidence from the
// host's own traffic, and a probe is sent only when that evidence is
// ambiguous (2026-07-28 streamable-http §Backward Compatibility; the
// decision table is in docs/compatibility.md).

// probeTimeout bounds a request of the bridge's own besides the probe
// (modernhost_listen.go): the probe's bound, translate.ProbeTimeout.
const probeTimeout = translate.ProbeTimeout

// verdict is what the bridge knows about the remote's era; the rules that
// reach one live in translate.Decide.
type verdict = translate.Era

const (
	verdictUnknown = translate.EraUnknown
	verdictModern  = translate.EraModern
	verdictLegacy  = translate.EraLegacy
)

// eras caches verdicts: "Clients SHOULD cache the result for the lifetime
// of the server process (stdio) or origin (HTTP)" (2026-07-28
// versioning §Backward Compatibility). The key is the endpoint URL, a
// finer key than the origin: one origin may route several MCP endpoints of
// different eras by path, and a wrong verdict costs a failed session.
var eras sync.Map // endpoint URL -> verdict

func (b *Bridge) cachedVerdict() verdict {
	if v, ok := eras.Load(b.cfg.URL); ok {
		return v.(verdict)
	}
	return verdictUnknown
}

func (b *Bridge) setVerdict(v verdict) {
	if old, loaded := eras.Swap(b.cfg.URL, v); !loaded || old.(verdict) != v {
		b.log.Info().Stringer("era", v).Msg("remote era determined")
	}
}

// forgetVerdict drops a cached verdict the remote contradicted ("re-probing
// if the cached assumption later fails", versioning §Backward Compatibility).
func (b *Bridge) forgetVerdict() { eras.Delete(b.cfg.URL) }

// strategy is how the bridge relays to this remote: as is, or translating
// one way. It is chosen once per remote, when the era verdict is known
// (decideMode at the host's first request, or switchMode when a
// pass-through exchange reveals that the remote lacks the host's era), and
// every call site that depends on the remote's era invokes it rather than
// asking which era that is.
type strategy interface {
	fmt.Stringer
	// relay answers one host request.
	relay(ctx context.Context, p *pending, m *wire.Message)
	// notify relays a host notification, after the host's earlier messages.
	notify(ctx context.Context, method string, raw []byte)
	// respond relays a host response that answers nothing the bridge asked.
	respond(ctx context.Context, m *wire.Message)
	// batch relays a host batch.
	batch(ctx context.Context, raw []byte)
	// unasked takes a message the remote sent outside any request's
	// stream, or reports false: it is routed as it came.
	unasked(msg []byte) bool
	// wireModern is the era a host request is sent in, as far as
	// cancellation knows before the request starts.
	wireModern(hostModern bool) bool
	// notices reports whether the host takes the bridge's own log
	// notifications (LogToHost).
	notices() bool
	// writeHeld answers p with held, the answer to method kept back while
	// the remote's era was probed.
	writeHeld(p *pending, held []byte, method string)
}

// chosen holds the strategy in force; Bridge.how points to one, swapped
// once, from pass-through.
type chosen struct{ strategy }

func (b *Bridge) strategy() strategy { return b.how.Load().strategy }

// passingThrough reports whether no translation was chosen (yet).
func (b *Bridge) passingThrough() bool { return b.how.Load() == b.passing }

// switchMode leaves pass-through for a translation, once.
func (b *Bridge) switchMode(to strategy) {
	if b.how.CompareAndSwap(b.passing, &chosen{to}) {
		b.log.Info().Stringer("mode", to).Msg("translating between protocol eras")
	}
}

// passThrough relays host and remote as they are: they speak the same era,
// or nothing is known yet (detection watches the exchanges, detect.go).
type passThrough struct{ b *Bridge }

func (passThrough) String() string { return "pass-through" }
func (s passThrough) relay(ctx context.Context, p *pending, m *wire.Message) {
	s.b.passRelay(ctx, p, m)
}
func (s passThrough) notify(ctx context.Context, method string, raw []byte) {
	s.b.passNotify(ctx, method, raw)
}
func (s passThrough) respond(ctx context.Context, m *wire.Message) {
	s.b.inOrder(ctx, func(ctx context.Context) { s.b.post(ctx, m.Raw, s.b.headersFor(m), "response") })
}
func (s passThrough) batch(ctx context.Context, raw []byte)       { s.b.passBatch(ctx, raw) }
func (passThrough) unasked([]byte) bool                           { return false }
func (passThrough) wireModern(hostModern bool) bool               { return hostModern }
func (passThrough) notices() bool                                 { return true }
func (s passThrough) writeHeld(p *pending, held []byte, _ string) { s.b.writeFinal(p, held) }

// legacyHostMode translates for a 2025 host on a 2026-07-28-only remote
// (legacyhost*.go).
type legacyHostMode struct{ h *legacyHost }

func (legacyHostMode) String() string { return "legacy host on a modern remote" }
func (s legacyHostMode) relay(ctx context.Context, p *pending, m *wire.Message) {
	s.h.relay(ctx, p, m)
}
func (s legacyHostMode) notify(ctx context.Context, method string, _ []byte) {
	s.h.notify(ctx, method)
}
func (s legacyHostMode) respond(_ context.Context, m *wire.Message) { s.h.b.dropHostResponse(m) }
func (s legacyHostMode) batch(ctx context.Context, raw []byte)      { s.h.b.splitBatch(ctx, raw) }
func (legacyHostMode) unasked([]byte) bool                          { return false }

// wireModern: a request of a translated legacy host is cancelled by
// closing its stream, even before it starts.
func (legacyHostMode) wireModern(bool) bool                          { return true }
func (legacyHostMode) notices() bool                                 { return true }
func (s legacyHostMode) writeHeld(p *pending, held []byte, _ string) { s.h.b.writeFinal(p, held) }

// modernHostMode translates for a 2026-07-28 host on a 2025-only remote
// (modernhost*.go).
type modernHostMode struct{ h *modernHost }

func (modernHostMode) String() string { return "modern host on a legacy remote" }
func (s modernHostMode) relay(ctx context.Context, p *pending, m *wire.Message) {
	s.h.relay(ctx, p, m)
}
func (s modernHostMode) notify(_ context.Context, method string, _ []byte) {
	s.h.b.log.Debug().Str("method", method).Msg("dropping a host notification: 2026-07-28 defines none but cancellation")
}
func (s modernHostMode) respond(_ context.Context, m *wire.Message) { s.h.b.dropHostResponse(m) }
func (s modernHostMode) batch(ctx context.Context, raw []byte)      { s.h.b.splitBatch(ctx, raw) }

// unasked: a 2026-07-28 host expects nothing unasked; the translation
// sorts it out.
func (s modernHostMode) unasked(msg []byte) bool {
	s.h.fromRemote(msg)
	return true
}
func (modernHostMode) wireModern(hostModern bool) bool { return hostModern }
func (modernHostMode) notices() bool                   { return false }

// writeHeld completes the 2025-shaped result held back for the host the
// way translation completes every result once the remote proved 2025-only.
func (s modernHostMode) writeHeld(p *pending, held []byte, method string) {
	var hm wire.Message
	if wire.Parse(held, &hm) == nil {
		s.h.b.writeFinal(p, translate.Complete(&hm, method, p.id))
		return
	}
	s.h.b.writeFinal(p, held)
}

func (b *Bridge) protocol() Protocol {
	if b.cfg.Protocol == "" {
		return ProtocolAuto
	}
	return b.cfg.Protocol
}

// decideMode picks the relay mode from the host's first request: its era
// (a request with the 2026-07-28 _meta envelope is modern, anything else,
// initialize above all, legacy) against the pinned or cached era of the
// remote. It runs on the stdin loop, before that request is relayed.
func (b *Bridge) decideMode(m *wire.Message) {
	hostModern := m.IsModern()
	remote := b.cachedVerdict()
	switch b.protocol() {
	case ProtocolModern:
		remote = verdictModern
	case ProtocolLegacy:
		remote = verdictLegacy
	}
	switch {
	case !hostModern && remote == verdictModern:
		b.switchMode(legacyHostMode{&b.lh})
	case hostModern && remote == verdictLegacy:
		b.switchMode(modernHostMode{&b.mh})
	}
}

// detectable reports whether a pass-through exchange may still reveal that
// the remote speaks the other era.
func (b *Bridge) detectable() bool {
	return b.protocol() == ProtocolAuto && b.passingThrough() && b.cachedVerdict() == verdictUnknown
}

// probeResult is what a server/discover probe learnt.
type probeResult struct {
	verdict verdict
	version string // the modern version to speak, for verdictModern
	result  []byte // the DiscoverResult response, when the remote sent one
}

// statusEvidence maps an HTTP error answer to a request of method (in the
// modern envelope or not) onto transport-neutral evidence.
func statusEvidence(se *httpclient.StatusError, method string, modern bool) translate.Evidence {
	switch se.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound:
		return translate.RefusalEvidence(method, modern, translate.AnswerRefused, se.Body)
	case http.StatusMethodNotAllowed:
		return translate.RefusalEvidence(method, modern, translate.AnswerNotAllowed, se.Body)
	}
	return translate.Evidence{Method: method, Modern: modern}
}

// probe sends server/discover with full modern headers and judges the
// answer. An error means no verdict: the remote is unreachable, failing
// (5xx) or wants credentials (401/403), which the caller reports.
func (b *Bridge) probe(ctx context.Context, caps, info []byte) (probeResult, error) {
	version := translate.Modern
	for attempt := 0; ; attempt++ {
		pr, retryWith, err := b.probeOnce(ctx, version, caps, info)
		if err == nil && retryWith != "" && attempt == 0 {
			// -32022 named another modern version: "the client SHOULD
			// select a mutually supported version from the supported list
			// and retry" (versioning §Protocol Version Negotiation).
			version = retryWith
			continue
		}
		if err == nil {
			b.log.Info().Stringer("era", pr.verdict).Str("version", pr.version).Msg("probed the remote with server/discover")
		}
		return pr, err
	}
}

func (b *Bridge) probeOnce(ctx context.Context, version string, caps, info []byte) (pr probeResult, retryWith string, err error) {
	ctx, cancel := context.WithTimeout(ctx, translate.ProbeTimeout)
	defer cancel()
	id := b.mintID("probe")
	params := append(append([]byte(`{"_meta":{`), translate.EnvelopeFields(version, caps, info, "")...), "}}"...)
	body := wire.Request(id, "server/discover", params)
	var m wire.Message
	if err := wire.Parse(body, &m); err != nil {
		return pr, "", err
	}
	// A legacy server may mint a session for the probe; the bridge's own
	// session, if any, must survive it.
	sid := b.client.SessionID()
	defer func() {
		if pr.verdict != verdictModern {
			b.client.SetSessionID(sid)
		}
	}()
	resp, err := b.client.Post(ctx, body, b.headersFor(&m))
	if err != nil {
		var se *httpclient.StatusError
		if !errors.As(err, &se) {
			return pr, "", err
		}
		d, retry := translate.JudgeProbe(statusEvidence(se, "server/discover", true), version)
		if d.Era == verdictUnknown {
			return pr, "", err
		}
		return probeResult{verdict: d.Era, version: d.Version}, retry, nil
	}
	defer resp.Close()
	r, err := awaitResponse(resp, id, nil)
	if err != nil {
		if ctx.Err() != nil {
			return pr, "", ctx.Err()
		}
		// 202 or a stream without an answer.
		d, _ := translate.JudgeProbe(translate.Evidence{Method: "server/discover", Modern: true, Answer: translate.AnswerEmpty}, version)
		return probeResult{verdict: d.Era}, "", nil
	}
	d, retry := translate.JudgeProbe(translate.ResponseEvidence("server/discover", true, r), version)
	pr = probeResult{verdict: d.Era, version: d.Version}
	if d.Era == verdictModern && r.Result.Present() {
		pr.result = clone(r.Raw)
	}
	return pr, retry, nil
}

// remoteCaps is the part of a server's capabilities the translation acts
// on: which change notifications it sends, whether it takes resource
// subscriptions and log levels.
type remoteCaps struct {
	toolsListChanged, promptsListChanged, resourcesListChanged bool
	resourcesSubscribe, logging                                bool
}

func parseRemoteCaps(raw []byte) remoteCaps {
	type listChanged struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	}
	var c struct {
		Tools     *listChanged    `json:"tools"`
		Prompts   *listChanged    `json:"prompts"`
		Resources *listChanged    `json:"resources"`
		Logging   json.RawMessage `json:"logging"`
	}
	if len(raw) > 0 {
		json.Unmarshal(raw, &c)
	}
	var r remoteCaps
	r.toolsListChanged = c.Tools != nil && c.Tools.ListChanged
	r.promptsListChanged = c.Prompts != nil && c.Prompts.ListChanged
	if c.Resources != nil {
		r.resourcesListChanged, r.resourcesSubscribe = c.Resources.ListChanged, c.Resources.Subscribe
	}
	r.logging = len(c.Logging) > 0 && string(c.Logging) != "null"
	return r
}
