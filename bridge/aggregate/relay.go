package aggregate

import (
	"bytes"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A relay is a server's request to the client in flight: the client sees
// our id, the server gets its own back.
type relay struct {
	d     *downstream
	id    []byte // the server's id, raw
	token int64  // our progress token in it, or 0
}

// A tokenOwner is the server and progress token behind a token we minted
// for the client.
type tokenOwner struct {
	d     *downstream
	token []byte
}

// relay sends a server's request (sampling, elicitation, roots) to the
// client under a fresh id, and a fresh progress token if it has one.
func (s *session) relay(d *downstream, m *wire.Message) {
	id := bytes.Clone(m.IDBytes())
	s.mu.Lock()
	d.mu.Lock()
	_, dup := d.relayed[string(id)]
	full := len(d.relayed) >= maxRelayed
	gone := d.err != nil
	var n, tok int64
	if !dup && !full && !gone {
		s.nextUp++
		n = s.nextUp
		d.relayed[string(id)] = n
	}
	d.mu.Unlock()
	edits := []wire.Edit{{Span: m.ID, Value: wire.AppendInt(nil, n)}}
	if n != 0 {
		if m.ProgressToken.Present() {
			s.nextUp++
			tok = s.nextUp
			s.upTokens[tok] = tokenOwner{d: d, token: bytes.Clone(m.Bytes(m.ProgressToken))}
			edits = append(edits, wire.Edit{Span: m.ProgressToken, Value: wire.AppendInt(nil, tok)})
		}
		s.relays[n] = relay{d: d, id: id, token: tok}
	}
	s.mu.Unlock()
	switch {
	case dup:
		d.post(wire.ErrorResponse(id, wire.CodeInvalidRequest, "aggregate: a request with this id is in flight", nil))
	case full:
		d.post(wire.ErrorResponse(id, wire.CodeInternalError, "aggregate: too many requests to the client in flight", nil))
	case gone:
	default:
		s.writeUp(wire.Splice(m.Raw, edits...))
	}
}

// clientResponse routes the client's answer to a relayed request back to
// the server that asked, under the server's own id. An answer to an id we
// did not mint, or minted and saw answered, is dropped.
func (s *session) clientResponse(m *wire.Message) {
	n, ok := wire.ParseIntID(m.IDBytes())
	s.mu.Lock()
	r, found := s.relays[n]
	if ok && found {
		s.forget(n, r)
	}
	s.mu.Unlock()
	if !ok || !found {
		s.warn.Warn(s.log, "client-stray-answer").Str("id", string(m.IDBytes())).
			Msg("aggregate: dropped an answer from the client to no request of ours")
		return
	}
	r.d.post(r.d.ownTasks(wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: r.id}))) // task ids: tasks.go
}

// forget drops relayed request n. s.mu is held.
func (s *session) forget(n int64, r relay) {
	delete(s.relays, n)
	delete(s.upTokens, r.token)
	r.d.mu.Lock()
	if r.d.relayed[string(r.id)] == n {
		delete(r.d.relayed, string(r.id))
	}
	r.d.mu.Unlock()
}

// clientProgress routes the client's progress on a relayed request to the
// server that asked, with the server's token.
func (s *session) clientProgress(m *wire.Message) {
	tok, ok := wire.ParseIntID(m.Bytes(m.ProgressToken))
	s.mu.Lock()
	o, found := s.upTokens[tok]
	s.mu.Unlock()
	if !ok || !found {
		s.warn.Warn(s.log, "client-stray-progress").Msg("aggregate: dropped progress from the client for no request of ours")
		return
	}
	o.d.post(wire.Splice(m.Raw, wire.Edit{Span: m.ProgressToken, Value: o.token}))
}

// serverCancelled passes a server's cancellation of its relayed request on
// to the client, under our id.
func (s *session) serverCancelled(d *downstream, m *wire.Message) {
	if !m.RequestID.Present() {
		return
	}
	s.mu.Lock()
	d.mu.Lock()
	n, ok := d.relayed[string(m.Bytes(m.RequestID))]
	d.mu.Unlock()
	if ok {
		s.forget(n, s.relays[n])
	}
	s.mu.Unlock()
	if !ok {
		d.log.Debug().Msg("aggregate: a server cancelled no request of its to the client")
		return
	}
	s.writeUp(wire.Splice(m.Raw, wire.Edit{Span: m.RequestID, Value: wire.AppendInt(nil, n)}))
}

// downstreamGone cancels at the client what a dead server had asked it,
// and tells the client the server's tools, prompts and resources left the
// lists.
func (s *session) downstreamGone(d *downstream, relayed map[string]int64, err error) {
	defer d.left.Store(true)
	s.mu.Lock()
	closing := s.closing
	var ids []int64
	for _, n := range relayed {
		if r, ok := s.relays[n]; ok && r.d == d {
			delete(s.relays, n)
			delete(s.upTokens, r.token)
			ids = append(ids, n)
		}
	}
	s.mu.Unlock()
	if closing {
		return
	}
	routable := s.routable(d)
	if d.removed.Load() {
		d.log.Debug().Err(err).Msg("aggregate: a removed server's connection ended")
	} else if routable {
		d.log.Warn().Err(err).Msg("aggregate: server ended; its tools, prompts and resources leave the lists")
	} else {
		// It failed to start or to join (which was logged), or ended
		// before it joined: it was never in the lists.
		d.log.Debug().Err(err).Msg("aggregate: server ended before it joined the session")
	}
	for _, n := range ids {
		params := append(append([]byte(`{"requestId":`), wire.AppendInt(nil, n)...), `,"reason":"the server that asked has ended"}`...)
		s.writeUp(wire.Notification("notifications/cancelled", params))
	}
	if !routable || !s.isReady() {
		return
	}
	for _, k := range []kind{kindTools, kindPrompts, kindResources} {
		if d.caps.has(k) {
			s.writeUp(wire.Notification(kinds[k].changed, nil))
		}
	}
}
