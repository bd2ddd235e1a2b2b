package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A 2026-07-28 server asks for sampling, elicitation or roots inside a
// result (mrtr §InputRequiredResult); a legacy host only knows them as
// server-to-client requests. The bridge sends the host one real request per
// inputRequests key, under ids it mints, takes the host's responses off
// stdin (they never reach the remote), and retries the call with them.

var errHostGone = errors.New("the host closed its connection")

// fulfil answers one InputRequiredResult and returns the params fields
// of the retry: the input responses (when the server asked for input) and the
// request state, echoed byte for byte ("the client MUST echo back the exact
// value of that field").
func (h *legacyHost) fulfil(ctx context.Context, p *pending, msg []byte, round int) ([]byte, error) {
	var m wire.Message
	if err := wire.Parse(msg, &m); err != nil {
		return nil, err
	}
	ir, err := translate.ReadRound(&m)
	if err != nil {
		return nil, err
	}
	var answers map[string][]byte
	if len(ir.Requests) > 0 {
		answers, err = h.askHost(ctx, p, ir.Requests)
		if err != nil {
			return nil, err
		}
		if len(answers) == 0 {
			// A retry without any of the input would only be asked again.
			methods := make([]string, 0, len(ir.Requests))
			for _, r := range ir.Requests {
				methods = append(methods, r.Method)
			}
			slices.Sort(methods)
			return nil, fmt.Errorf("the remote needs input the host did not give (%s: capability not declared, or the host answered with an error)", strings.Join(slices.Compact(methods), ", "))
		}
	} else {
		// No input to gather: the server sheds load or just wants the
		// state back. The client "MAY retry the original request
		// immediately"; a growing pause keeps a busy server from being
		// hammered.
		t := time.NewTimer(min(time.Duration(round+1)*200*time.Millisecond, 2*time.Second))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return translate.RetryFields(answers, ir.State), nil
}

// askHost sends each input request to the host as a JSON-RPC request and
// returns the results by key. A request the host did not declare the
// capability for is not sent (the server "MUST NOT send an inputRequests
// that the client has not declared support for"), and one the host answers
// with an error is left out: either way the server sees the key missing
// and "SHOULD respond with a new InputRequiredResult" or fail the call.
func (h *legacyHost) askHost(ctx context.Context, p *pending, reqs map[string]translate.InputRequest) (map[string][]byte, error) {
	b := h.b
	h.mu.Lock()
	var caps wire.Capabilities
	json.Unmarshal(h.hs.caps, &caps)
	h.mu.Unlock()

	type ask struct {
		key, id string
		ch      chan []byte
	}
	var asks []ask
	defer func() {
		h.mu.Lock()
		var open []string
		for _, a := range asks {
			if _, ok := h.inputs[a.id]; ok {
				open = append(open, a.id)
				delete(h.inputs, a.id)
			}
		}
		h.mu.Unlock()
		// The call is over without these answers: the host may stop
		// working on them (2025-11-25 cancellation: "Either side can send").
		for _, id := range open {
			params := append(append([]byte(`{"requestId":`), id...), `,"reason":"mcp-bridge: the request this input was for ended"}`...)
			b.write(wire.Notification("notifications/cancelled", params))
		}
	}()
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		r := reqs[k]
		if !translate.Covers(caps, r.Method, r.Params) {
			b.warns.undeclared.Event(&b.log, zerolog.WarnLevel).Str("method", r.Method).Str("key", k).Msg("remote asked for input the host did not declare a capability for; not asking the host")
			continue
		}
		a := ask{key: k, id: string(b.mintID("input")), ch: make(chan []byte, 1)}
		h.mu.Lock()
		if h.inputs == nil {
			h.inputs = map[string]chan []byte{}
		}
		h.inputs[a.id] = a.ch
		h.mu.Unlock()
		asks = append(asks, a)
		var params []byte
		if len(r.Params) > 0 && string(r.Params) != "null" {
			params = r.Params
		}
		b.write(wire.Request([]byte(a.id), r.Method, translate.LegacyInputParams(r.Method, params)))
	}
	answers := make(map[string][]byte, len(asks))
	for _, a := range asks {
		var resp []byte
		select {
		case resp = <-a.ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.streamCtx.Done():
			return nil, errHostGone
		}
		var m wire.Message
		if wire.Parse(resp, &m) != nil || !m.Result.Present() {
			b.log.Info().Str("key", a.key).Msg("the host answered an input request with an error; retrying without that input")
			continue
		}
		answers[a.key] = clone(m.Bytes(m.Result))
	}
	return answers, nil
}

// deliver hands the host's response to a request the bridge made up to
// its waiter, and reports whether it was one. It runs on the stdin loop.
func (h *legacyHost) deliver(m *wire.Message) bool {
	id := string(m.IDBytes())
	h.mu.Lock()
	ch := h.inputs[id]
	delete(h.inputs, id)
	h.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- clone(m.Raw)
	return true
}
