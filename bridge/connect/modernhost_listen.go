package connect

import (
	"context"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A 2026-07-28 host's subscriptions/listen on a legacy remote: the machine
// is translate's ListenHub (listenhub.go); connect serves the request until
// the host cancels it (stdio: notifications/cancelled with its id) or
// leaves, and is the hub's back: the remote's advertised capabilities and
// its session's resources/subscribe.

// listen serves a host's subscriptions/listen until the host cancels it or
// leaves.
func (h *modernHost) listen(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	if err := h.ensureSession(ctx, m); err != nil {
		b.answerError(p, err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.setExchange(p, p.wireID, listening{pass{b}, cancel})
	if p.cancelled.Load() {
		return
	}
	l := h.listeners.Open(ctx, h, m, p.id, func(msg []byte) { b.host.Write(msg) })
	defer h.listeners.Close(l)
	select {
	case <-ctx.Done():
	case <-b.streamCtx.Done():
	}
}

// listening is the exchange of a host's listen request: the host's
// cancellation ends it.
type listening struct {
	pass
	cancel context.CancelFunc
}

func (x listening) cancelled(*pending) bool { x.cancel(); return true }

// ChangeCaps: "Notification types the server does not support are
// omitted" from the acknowledgement; the remote's capabilities say what it
// sends.
func (h *modernHost) ChangeCaps() translate.ChangeCaps {
	return h.remoteCaps().ChangeCaps
}

// Subscribe subscribes the remote session to uri.
func (h *modernHost) Subscribe(ctx context.Context, uri string) error {
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	err := h.request(ctx, "resources/subscribe", params)
	if err != nil {
		h.b.log.Info().Err(err).Str("uri", uri).Msg("the remote refused a resource subscription")
	}
	return err
}

// Unsubscribe unsubscribes the remote session from uri. Nothing is sent
// once the host has left: the session is about to be deleted anyway.
func (h *modernHost) Unsubscribe(uri string) {
	if h.b.streamCtx.Err() != nil {
		return
	}
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	ctx, cancel := context.WithTimeout(h.b.streamCtx, probeTimeout)
	defer cancel()
	if err := h.request(ctx, "resources/unsubscribe", params); err != nil {
		h.b.log.Debug().Err(err).Str("uri", uri).Msg("resources/unsubscribe")
	}
}
