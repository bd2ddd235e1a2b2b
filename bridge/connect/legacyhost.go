package connect

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// legacyHost translates for a host that speaks a 2025 revision (initialize
// handshake, server-to-client requests) on a remote that speaks only
// 2026-07-28. The host keeps its session semantics; the remote sees
// stateless requests:
//
//   - initialize is answered from the remote's server/discover;
//   - every forwarded request carries the per-request envelope built from
//     the host's initialize ("fields marked as required MUST be included on
//     every request", 2026-07-28 basic/index §_meta) and modern headers;
//   - what 2026-07-28 removed is answered here: ping, logging/setLevel
//     (kept as the logLevel the envelope carries), resources/subscribe and
//     unsubscribe (kept as the URI set of a subscriptions/listen stream,
//     which also carries the list_changed notifications a legacy server
//     would send unasked);
//   - an InputRequiredResult becomes real requests to the host, and the
//     bridge retries the call with their answers (legacyhost_input.go).
type legacyHost struct {
	b *Bridge

	mu       sync.Mutex
	hs       handshake // the host's initialize
	version  string    // the modern version spoken to the remote ("" before discovery)
	discover []byte    // the remote's DiscoverResult response, nil if it sent none
	caps     remoteCaps
	logLevel string
	subs     map[string]bool // resource URIs the host subscribed to
	ready    bool            // the host sent notifications/initialized
	inputs   map[string]chan []byte

	listenMu sync.Mutex // serializes (re)starting the listen stream
	listen   *listenRun
}

// adopt takes the host's initialize and the remote's discovery.
func (h *legacyHost) adopt(init []byte, pr probeResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hs = parseHandshake(init)
	h.version = pr.version
	h.discover = pr.result
	h.caps = parseRemoteCaps(discoverField(pr.result, "capabilities"))
	h.b.client.SetSessionID("") // 2026-07-28 has no sessions
}

// resultOf returns the result object of response resp (nil if none).
func resultOf(resp []byte) []byte {
	var m wire.Message
	if resp == nil || wire.Parse(resp, &m) != nil || !m.Result.Present() {
		return nil
	}
	return m.Bytes(m.Result)
}

// discoverField returns a top-level field of a DiscoverResult response.
func discoverField(resp []byte, key string) []byte {
	var m wire.Message
	if resp == nil || wire.Parse(resp, &m) != nil {
		return nil
	}
	sp, ok := wire.Field(m.Raw, m.Result, key)
	if !ok {
		return nil
	}
	return m.Bytes(sp)
}

// ensureDiscovered probes the remote if nothing was learnt about it yet
// (the era was pinned or cached rather than detected).
func (h *legacyHost) ensureDiscovered(ctx context.Context) error {
	h.mu.Lock()
	known, hs := h.version != "", h.hs
	h.mu.Unlock()
	if known {
		return nil
	}
	pr, err := h.b.probe(ctx, hs.caps, hs.info)
	if err != nil {
		return err
	}
	if pr.verdict != verdictModern {
		h.b.forgetVerdict()
		return errors.New("the remote does not speak 2026-07-28 (server/discover was refused like a 2025 server refuses it); drop --protocol modern")
	}
	h.b.setVerdict(verdictModern)
	h.mu.Lock()
	h.version, h.discover = pr.version, pr.result
	h.caps = parseRemoteCaps(discoverField(pr.result, "capabilities"))
	h.mu.Unlock()
	return nil
}

// relay answers one host request: locally when 2026-07-28 removed the
// method, otherwise by forwarding it in the modern form.
func (h *legacyHost) relay(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	b.resetWire(p, true)
	switch m.Method {
	case "initialize":
		h.mu.Lock()
		h.hs = parseHandshake(m.Raw)
		h.version, h.discover, h.ready, h.subs, h.logLevel = "", nil, false, nil, ""
		h.mu.Unlock()
		h.stopListen()
		if err := h.ensureDiscovered(ctx); err != nil {
			b.answerError(p, err)
			return
		}
		h.answerInitialize(p)
	case "ping":
		// Removed in 2026-07-28; the receiver "MUST respond promptly with
		// an empty response" (2025-11-25 basic/utilities/ping).
		b.writeFinal(p, wire.ResultResponse(p.id, []byte("{}")))
	case "logging/setLevel":
		level, ok := wire.StringField(m.Raw, m.Params, "level")
		if !ok || level == "" {
			b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInvalidParams, "Invalid params: level is required", nil))
			return
		}
		// 2026-07-28 carries the level per request, in _meta
		// io.modelcontextprotocol/logLevel; every later request gets it.
		h.mu.Lock()
		h.logLevel = level
		h.mu.Unlock()
		b.writeFinal(p, wire.ResultResponse(p.id, []byte("{}")))
	case "resources/subscribe", "resources/unsubscribe":
		if m.URI == "" {
			b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInvalidParams, "Invalid params: uri is required", nil))
			return
		}
		h.subscribe(m.URI, m.Method == "resources/subscribe")
		b.writeFinal(p, wire.ResultResponse(p.id, []byte("{}")))
	default:
		if !h.task(ctx, p, m) {
			h.call(ctx, p, m)
		}
	}
}

// answerInitialize answers the host's initialize from the remote's
// DiscoverResult: its capabilities, instructions and serverInfo (which
// 2026-07-28 carries in the result's _meta).
func (h *legacyHost) answerInitialize(p *pending) {
	h.mu.Lock()
	version, disc := h.hs.version, h.discover
	h.mu.Unlock()
	r := translate.TasksToLegacy(translate.InitializeFromDiscover(resultOf(disc), translate.NegotiateLegacy(version)), resultOf(disc))
	h.b.writeFinal(p, wire.ResultResponse(p.id, r))
}

// notify handles a host notification. notifications/initialized opens the
// listen stream; 2026-07-28 defines no other client notification over
// HTTP ("this revision defines no client-to-server notifications",
// streamable-http §Sending Messages), and cancellation was handled before.
func (h *legacyHost) notify(_ context.Context, method string) {
	if method == "notifications/initialized" {
		h.onInitialized()
		return
	}
	h.b.log.Debug().Str("method", method).Msg("dropping a host notification a 2026-07-28 remote has no use for")
}

func (h *legacyHost) onInitialized() {
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
	h.restartListen()
}

// subscribe adds or removes uri from the subscribed set; the listen stream
// follows the set.
func (h *legacyHost) subscribe(uri string, on bool) {
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]bool{}
	}
	changed := h.subs[uri] != on
	if on {
		h.subs[uri] = true
	} else {
		delete(h.subs, uri)
	}
	ready := h.ready
	h.mu.Unlock()
	if changed && ready {
		h.restartListen()
	}
}

// envelope returns m with the 2026-07-28 _meta envelope: the modern
// version, the capabilities and identity the host declared in its
// initialize, and its log level once it set one.
func (h *legacyHost) envelope(m *wire.Message) ([]byte, error) {
	h.mu.Lock()
	fields := translate.EnvelopeFields(h.version, taskCaps(h.hs.caps, m), h.hs.info, h.logLevel)
	h.mu.Unlock()
	msg := *m
	for _, k := range translate.EnvelopeKeys {
		if _, ok := wire.Field(m.Raw, m.Meta, k); ok {
			// The bridge's envelope wins: the remote must see one version.
			raw := wire.WithoutFields(m.Raw, m.Meta, translate.EnvelopeKeys...)
			if err := wire.Parse(raw, &msg); err != nil {
				return nil, err
			}
			break
		}
	}
	return wire.WithMetaFields(&msg, fields), nil
}

// maxInputRounds bounds the input rounds of one request.
const maxInputRounds = 16

// call forwards a request in the 2026-07-28 form and answers the host with
// one ordinary response, driving any input rounds in between.
func (h *legacyHost) call(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	if err := h.ensureDiscovered(ctx); err != nil {
		b.answerError(p, err)
		return
	}
	ctx, cancel := b.requestCtx(ctx)
	defer cancel()
	first, err := h.envelope(m)
	if err != nil {
		b.answerError(p, err)
		return
	}
	var orig wire.Message
	if err := wire.Parse(first, &orig); err != nil {
		b.answerError(p, err)
		return
	}
	var inputRequired []byte
	b.setHooks(p, func(fm *wire.Message) {
		if translate.IsInputRequired(fm) {
			inputRequired = clone(fm.Raw)
			return
		}
		b.writeFinal(p, h.tidy(p, fm))
	}, nil)
	wm := orig
	for round := 0; ; round++ {
		inputRequired = nil
		if err := b.forward(ctx, p, &wm); err != nil {
			b.answerError(p, err)
			return
		}
		if inputRequired == nil || p.cancelled.Load() {
			return
		}
		if round >= maxInputRounds {
			b.fail(p, fmt.Errorf("the remote asked for input %d times in a row; giving up", round+1), nil)
			return
		}
		fields, err := h.fulfil(ctx, p, inputRequired, round)
		if err != nil {
			if !p.cancelled.Load() {
				b.fail(p, err, nil)
			}
			return
		}
		// mrtr §Client Requirements: the retry is the original request
		// with a new id ("The JSON-RPC id MUST be different"),
		// the input responses and the request state echoed byte for byte.
		b.setWireID(p, b.mintID("retry"))
		retry := wire.WithParamsFields(&orig, fields)
		var rm wire.Message
		if err := wire.Parse(retry, &rm); err != nil {
			b.answerError(p, err)
			return
		}
		retry = wire.Splice(retry, wire.Edit{Span: rm.ID, Value: p.wireID})
		if err := wire.Parse(retry, &wm); err != nil {
			b.answerError(p, err)
			return
		}
	}
}

// tidy returns a response as a legacy host should see it: with its own id
// and without the 2026-07-28 result fields it does not know (resultType,
// ttlMs, cacheScope), tools with invalid x-mcp-header annotations removed.
func (h *legacyHost) tidy(p *pending, fm *wire.Message) []byte {
	fm = h.taskShape(p.method, fm)
	raw := fm.Raw
	if fm.Result.Present() {
		m := fm
		if p.method == "tools/list" {
			// absorb returns the message itself, or a shorter copy without
			// the tools it rejected.
			if raw = h.b.tools.absorb(h.b, fm); len(raw) != len(fm.Raw) {
				m = &wire.Message{}
				if wire.Parse(raw, m) != nil {
					return h.b.hostID(p, raw)
				}
			}
		}
		raw = wire.WithoutFields(raw, m.Result, "resultType", "ttlMs", "cacheScope")
	}
	return h.b.hostID(p, raw)
}
