package remote

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

// eras caches verdicts: "Clients SHOULD cache the result for the lifetime
// of the server process (stdio) or origin (HTTP)" (2026-07-28
// versioning §Backward Compatibility). The key is the endpoint URL, a
// finer key than the origin: one origin may route several MCP endpoints of
// different eras by path, and a wrong verdict costs a failed session.
var eras sync.Map // endpoint URL -> translate.Era

// CachedEra returns the verdict cached for the endpoint url, EraUnknown
// without one.
func CachedEra(url string) translate.Era {
	if v, ok := eras.Load(url); ok {
		return v.(translate.Era)
	}
	return translate.EraUnknown
}

// CacheEra caches v for the endpoint url and reports whether that changed
// what was cached.
func CacheEra(url string, v translate.Era) bool {
	old, loaded := eras.Swap(url, v)
	return !loaded || old.(translate.Era) != v
}

// ForgetEra drops the verdict cached for the endpoint url.
func ForgetEra(url string) { eras.Delete(url) }

// Verdict returns the verdict cached for this remote's endpoint.
func (r *Remote) Verdict() translate.Era { return CachedEra(r.cfg.URL) }

// SetVerdict caches v for this remote's endpoint.
func (r *Remote) SetVerdict(v translate.Era) {
	if CacheEra(r.cfg.URL, v) {
		r.log.Info().Stringer("era", v).Msg("remote era determined")
	}
}

// ForgetVerdict drops a cached verdict the remote contradicted ("re-probing
// if the cached assumption later fails", versioning §Backward Compatibility).
func (r *Remote) ForgetVerdict() { ForgetEra(r.cfg.URL) }

// ProbeResult is what a server/discover probe learnt.
type ProbeResult struct {
	Verdict translate.Era
	Version string // the modern version to speak, for EraModern
	Result  []byte // the DiscoverResult response, when the remote sent one
}

// StatusEvidence maps an HTTP error answer to a request of method (in the
// modern envelope or not) onto transport-neutral evidence.
func StatusEvidence(se *httpclient.StatusError, method string, modern bool) translate.Evidence {
	switch se.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound:
		return translate.RefusalEvidence(method, modern, translate.AnswerRefused, se.Body)
	case http.StatusMethodNotAllowed:
		return translate.RefusalEvidence(method, modern, translate.AnswerNotAllowed, se.Body)
	}
	return translate.Evidence{Method: method, Modern: modern}
}

// Probe sends server/discover with full modern headers and judges the
// answer. An error means no verdict: the remote is unreachable, failing
// (5xx) or wants credentials (401/403), which the caller reports.
func (r *Remote) Probe(ctx context.Context, caps, info []byte) (ProbeResult, error) {
	version := translate.Modern
	for attempt := 0; ; attempt++ {
		pr, retryWith, err := r.probeOnce(ctx, version, caps, info)
		if err == nil && retryWith != "" && attempt == 0 {
			// -32022 named another modern version: "the client SHOULD
			// select a mutually supported version from the supported list
			// and retry" (versioning §Protocol Version Negotiation).
			version = retryWith
			continue
		}
		if err == nil {
			r.log.Info().Stringer("era", pr.Verdict).Str("version", pr.Version).Msg("probed the remote with server/discover")
		}
		return pr, err
	}
}

func (r *Remote) probeOnce(ctx context.Context, version string, caps, info []byte) (pr ProbeResult, retryWith string, err error) {
	ctx, cancel := context.WithTimeout(ctx, translate.ProbeTimeout)
	defer cancel()
	id := r.MintID("probe")
	body := wire.Request(id, "server/discover", translate.ProbeParams(version, caps, info))
	var m wire.Message
	if err := wire.Parse(body, &m); err != nil {
		return pr, "", err
	}
	// A legacy server may mint a session for the probe; the bridge's own
	// session, if any, must survive it.
	sid := r.client.SessionID()
	defer func() {
		if pr.Verdict != translate.EraModern {
			r.client.SetSessionID(sid)
		}
	}()
	resp, err := r.client.Post(ctx, body, r.HeadersFor(&m))
	if err != nil {
		var se *httpclient.StatusError
		if !errors.As(err, &se) {
			return pr, "", err
		}
		d, retry := translate.JudgeProbe(StatusEvidence(se, "server/discover", true), version)
		if d.Era == translate.EraUnknown {
			return pr, "", err
		}
		return ProbeResult{Verdict: d.Era, Version: d.Version}, retry, nil
	}
	defer resp.Close()
	rm, err := AwaitResponse(resp, id, nil)
	if err != nil {
		if ctx.Err() != nil {
			return pr, "", ctx.Err()
		}
		// 202 or a stream without an answer.
		d, _ := translate.JudgeProbe(translate.Evidence{Method: "server/discover", Modern: true, Answer: translate.AnswerEmpty}, version)
		return ProbeResult{Verdict: d.Era}, "", nil
	}
	d, retry := translate.JudgeProbe(translate.ResponseEvidence("server/discover", true, rm), version)
	pr = ProbeResult{Verdict: d.Era, Version: d.Version}
	if d.Era == translate.EraModern && rm.Result.Present() {
		pr.Result = clone(rm.Raw)
	}
	return pr, retry, nil
}

// Caps is the part of a server's capabilities the translation acts
// on: which change notifications it sends, whether it takes resource
// subscriptions (translate.ChangeCaps) and log levels.
type Caps struct {
	translate.ChangeCaps
	Logging bool
}

// ParseCaps reads Caps from a server's capabilities object (raw).
func ParseCaps(raw []byte) Caps {
	var c struct {
		Logging json.RawMessage `json:"logging"`
	}
	if len(raw) > 0 {
		json.Unmarshal(raw, &c)
	}
	return Caps{translate.ParseChangeCaps(raw), len(c.Logging) > 0 && string(c.Logging) != "null"}
}

// Refusal reports whether err is an HTTP refusal that may be an era
// mismatch (400/404/405), as opposed to auth trouble or an outage.
func Refusal(err error) (*httpclient.StatusError, bool) {
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

// ObserveErr judges the error a request to the remote ended with: only an
// HTTP status answer is evidence (a refusal, weakly); se is nil otherwise.
func ObserveErr(err error, method string, modern bool) (translate.Decision, translate.Step, *httpclient.StatusError) {
	var se *httpclient.StatusError
	if !errors.As(err, &se) {
		return translate.Decision{}, translate.StepPass, nil
	}
	d, step := translate.Observe(StatusEvidence(se, method, modern))
	return d, step, se
}
