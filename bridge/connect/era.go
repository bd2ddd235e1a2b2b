package connect

import (
	"context"
	"encoding/json"
	"errors"
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

func (b *Bridge) protocol() Protocol {
	if b.cfg.Protocol == "" {
		return ProtocolAuto
	}
	return b.cfg.Protocol
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
	body := wire.Request(id, "server/discover", translate.ProbeParams(version, caps, info))
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
// subscriptions (translate.ChangeCaps) and log levels.
type remoteCaps struct {
	translate.ChangeCaps
	logging bool
}

func parseRemoteCaps(raw []byte) remoteCaps {
	var c struct {
		Logging json.RawMessage `json:"logging"`
	}
	if len(raw) > 0 {
		json.Unmarshal(raw, &c)
	}
	return remoteCaps{translate.ParseChangeCaps(raw), len(c.Logging) > 0 && string(c.Logging) != "null"}
}
