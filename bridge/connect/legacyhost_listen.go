package connect

import (
	"context"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The session (legacysession) decides what a legacy host's listen stream
// asks for and when it is (re)opened; connect runs it: one loop per stream
// on the Bridge's stream goroutines, re-opened when it breaks (by
// bridge/remote: remote.Remote.Listen).

// OpenListen starts the loop of one listen stream for filter; the returned
// func ends it and waits for it.
func (h *legacyHost) OpenListen(filter []byte) (stop func()) {
	b := h.b
	if b.streamCtx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(b.streamCtx)
	done := make(chan struct{})
	if !b.streams.Go(func() {
		defer close(done)
		h.listenLoop(ctx, filter)
	}) {
		close(done) // Run has joined the streams: none starts now
	}
	return func() {
		cancel()
		<-done
	}
}

// listenLoop keeps a listen stream open until ctx ends (remote.Remote.Listen
// re-opens a broken one) and passes its notifications to the host
// (legacysession.ListenNotification).
func (h *legacyHost) listenLoop(ctx context.Context, filter []byte) {
	b := h.b
	b.remote.Listen(ctx, func() []byte { return h.s.ListenParams(filter) }, func(m *wire.Message) {
		if out := legacysession.ListenNotification(m); out != nil {
			b.host.Write(out)
		}
	})
}
