package connect

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The session (legacysession) decides what a legacy host's listen stream
// asks for and when it is (re)opened; connect runs it: one loop per stream
// on the Bridge's stream goroutines, re-opened when it breaks.

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

// listenLoop keeps a listen stream open until ctx ends. A broken stream
// is a lost request that "clients MUST re-issue ... as a new request with
// a new request ID" (2026-07-28 changelog), after a growing pause.
func (h *legacyHost) listenLoop(ctx context.Context, filter []byte) {
	b := h.b
	bo := remote.ListenBackoff()
	for {
		id := b.remote.MintID("listen")
		body := wire.Request(id, "subscriptions/listen", h.s.ListenParams(filter))
		var m wire.Message
		if wire.Parse(body, &m) != nil {
			return
		}
		resp, err := b.remote.Post(ctx, body, b.remote.HeadersFor(&m))
		switch {
		case ctx.Err() != nil:
			if resp != nil {
				resp.Close()
			}
			return
		case err != nil:
			var se *httpclient.StatusError
			if errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 &&
				se.StatusCode != http.StatusRequestTimeout && se.StatusCode != http.StatusTooManyRequests {
				b.log.Warn().Err(err).Msg("the remote refused subscriptions/listen: the host gets no change notifications")
				return
			}
			b.log.Debug().Err(err).Msg("subscriptions/listen failed")
		default:
			delivered := h.drainListen(resp, id)
			resp.Close()
			if ctx.Err() != nil {
				return
			}
			if delivered {
				bo.Reset()
			}
		}
		wait := bo.NextBackOff()
		b.log.Debug().Int64("in_ms", wait.Milliseconds()).Msg("re-opening subscriptions/listen")
		if !remote.SleepCtx(ctx, wait) {
			return
		}
	}
}

// drainListen passes the notifications of one listen stream to the host
// (legacysession.ListenNotification).
func (h *legacyHost) drainListen(resp *httpclient.Response, id []byte) (delivered bool) {
	b := h.b
	for {
		msg, err := resp.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				b.log.Debug().Err(err).Msg("listen stream read")
			}
			return delivered
		}
		var m wire.Message
		if !b.remoteJSON(msg) || wire.Parse(msg, &m) != nil {
			continue
		}
		delivered = true
		switch {
		case m.Kind == wire.KindResponse && string(m.IDBytes()) == string(id):
			// The server ended the subscription gracefully; the loop
			// opens a new one.
			return delivered
		default:
			if out := legacysession.ListenNotification(&m); out != nil {
				b.write(out)
			}
		}
	}
}
