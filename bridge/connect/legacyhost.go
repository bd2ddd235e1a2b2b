package connect

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// legacyHost is connect's face of a legacy session on a 2026-07-28-only
// remote (bridge/translate/legacysession plays the session): a host that
// speaks a 2025 revision (initialize handshake, server-to-client requests)
// on stdio, the remote over stateless Streamable HTTP. The session answers
// what 2026-07-28 removed and turns input rounds into requests to the host;
// this face forwards the rest, writes to the host, and runs the listen
// stream (legacyhost_listen.go).
type legacyHost struct {
	b *Bridge
	s *legacysession.Session
}

func (h *legacyHost) init(b *Bridge) {
	h.b = b
	// The retry carries every answer in one message to the remote.
	h.s = legacysession.New(h, b.cfg.maxMessageSize())
}

// errHostGone ends what waits for the host once it closed stdin.
var errHostGone = errors.New("the host closed its connection")

// adopt takes the host's initialize and the remote's discovery.
func (h *legacyHost) adopt(init []byte, pr probeResult) {
	var m wire.Message
	if init != nil && wire.Parse(init, &m) == nil {
		h.s.Handshake(&m)
	}
	h.s.Discovered(pr.Version, resultOf(pr.Result))
	h.b.remote.DropSession() // 2026-07-28 has no sessions
}

// resultOf returns the result object of response resp (nil if none).
func resultOf(resp []byte) []byte {
	var m wire.Message
	if resp == nil || wire.Parse(resp, &m) != nil || !m.Result.Present() {
		return nil
	}
	return m.Bytes(m.Result)
}

// ensureDiscovered probes the remote if nothing was learnt about it yet
// (the era was pinned or cached rather than detected).
func (h *legacyHost) ensureDiscovered(ctx context.Context) error {
	if h.s.Known() {
		return nil
	}
	caps, info := h.s.Handshook()
	pr, err := h.b.remote.Probe(ctx, caps, info)
	if err != nil {
		return err
	}
	if pr.Verdict != verdictModern {
		h.b.remote.ForgetVerdict()
		return errors.New("the remote does not speak 2026-07-28 (server/discover was refused like a 2025 server refuses it); drop --protocol modern")
	}
	h.b.remote.SetVerdict(verdictModern)
	h.s.Discovered(pr.Version, resultOf(pr.Result))
	return nil
}

// relay answers one host request: locally when 2026-07-28 removed the
// method, otherwise by forwarding it in the modern form.
func (h *legacyHost) relay(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	b.resetWire(p, true)
	if m.Method == "initialize" {
		h.s.Handshake(m)
		if err := h.ensureDiscovered(ctx); err != nil {
			b.answerError(p, err)
			return
		}
		h.answerInitialize(p)
		return
	}
	if resp, ok := h.s.Answer(p.id, m); ok {
		b.writeFinal(p, resp)
		return
	}
	if !h.task(ctx, p, m) {
		h.call(ctx, p, m)
	}
}

// answerInitialize answers the host's initialize from the remote's
// DiscoverResult.
func (h *legacyHost) answerInitialize(p *pending) {
	h.b.writeFinal(p, wire.ResultResponse(p.id, h.s.InitializeResult()))
}

// notify handles a host notification (cancellation was handled before).
func (h *legacyHost) notify(_ context.Context, method string) {
	if !h.s.Notify(method) {
		h.b.log.Debug().Str("method", method).Msg("dropping a host notification a 2026-07-28 remote has no use for")
	}
}

func (h *legacyHost) onInitialized() { h.s.Notify("notifications/initialized") }

// envelope returns m with the 2026-07-28 _meta envelope.
func (h *legacyHost) envelope(m *wire.Message) ([]byte, error) { return h.s.Forward(m) }

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
	x := &legacyCall{pass: pass{b}, h: h}
	b.setExchange(p, p.wireID, x)
	wm := orig
	for round := 0; ; round++ {
		x.inputRequired = nil
		if err := b.remote.Forward(ctx, p, &wm); err != nil {
			b.answerError(p, err)
			return
		}
		if x.inputRequired == nil || p.cancelled.Load() {
			return
		}
		r, err := h.fulfil(ctx, p, x.inputRequired, round)
		if err != nil {
			if !p.cancelled.Load() {
				b.fail(p, err, nil)
			}
			return
		}
		b.setExchange(p, b.remote.MintID("retry"), x)
		retry, err := legacysession.Retry(orig.Raw, r, p.wireID)
		if err != nil {
			b.answerError(p, err)
			return
		}
		if err := wire.Parse(retry, &wm); err != nil {
			b.answerError(p, err)
			return
		}
	}
}

// legacyCall is the exchange of a legacy host's request forwarded in the
// 2026-07-28 form: its final response answers the host, unless it is an
// InputRequiredResult, which call keeps for the next round.
type legacyCall struct {
	pass
	h             *legacyHost
	inputRequired []byte
}

func (x *legacyCall) final(p *pending, fm *wire.Message) {
	if translate.IsInputRequired(fm) {
		x.inputRequired = clone(fm.Raw)
		return
	}
	x.b.writeFinal(p, x.h.tidy(p, fm))
}

// fulfil answers one InputRequiredResult: it sends the round's requests
// to the host and waits for its answers (deliver).
func (h *legacyHost) fulfil(ctx context.Context, p *pending, msg []byte, n int) (*legacysession.Round, error) {
	b := h.b
	var m wire.Message
	if err := wire.Parse(msg, &m); err != nil {
		return nil, err
	}
	r, reqs, undeclared, err := h.s.Begin(string(p.id), nil, &m, n)
	for _, method := range undeclared {
		b.warns.undeclared.Event(&b.log, zerolog.WarnLevel).Str("method", method).Msg("remote asked for input the host did not declare a capability for; not asking the host")
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		// The call is over without these answers: the host may stop
		// working on them (2025-11-25 cancellation: "Either side can send").
		for _, id := range h.s.Drop(r) {
			params := append(append([]byte(`{"requestId":`), id...), `,"reason":"mcp-bridge: the request this input was for ended"}`...)
			b.write(wire.Notification("notifications/cancelled", params))
		}
	}()
	if d := legacysession.RetryPause(r); d > 0 && !remote.SleepCtx(ctx, d) {
		return nil, ctx.Err()
	}
	for _, q := range reqs {
		b.write(q)
	}
	select {
	case <-r.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.streamCtx.Done():
		return nil, errHostGone
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// deliver hands the host's response to a request the bridge made up to
// its round, and reports whether it was one. It runs on the stdin loop.
func (h *legacyHost) deliver(m *wire.Message) bool {
	r, _ := h.s.Answered(m)
	return r != nil
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
			if raw = h.b.remote.AbsorbTools(fm); len(raw) != len(fm.Raw) {
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
