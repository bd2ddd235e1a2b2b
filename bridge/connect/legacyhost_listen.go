package connect

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// A legacy server sends notifications/{tools,prompts,resources}/list_changed
// unasked when it advertised listChanged, and notifications/resources/updated
// for URIs the client subscribed to. A 2026-07-28 server sends them only on
// a subscriptions/listen stream, for the kinds the client names ("The server
// MUST NOT send notification types the client has not explicitly
// requested", basic/patterns/subscriptions). So once the host is initialized
// the bridge keeps one listen stream open for what the remote advertises plus
// the host's subscriptions, and passes its notifications on as ordinary
// legacy ones.

// listenRun is one running listen loop.
type listenRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// restartListen replaces the listen stream with one for the current
// filter (or none if there is nothing to listen for).
func (h *legacyHost) restartListen() {
	b := h.b
	h.listenMu.Lock()
	defer h.listenMu.Unlock()
	h.stopListenLocked()
	filter := h.filter()
	if filter == nil || b.streamCtx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(b.streamCtx)
	run := &listenRun{cancel: cancel, done: make(chan struct{})}
	h.listen = run
	if !b.streams.Go(func() {
		defer close(run.done)
		h.listenLoop(ctx, filter)
	}) {
		close(run.done) // Run has joined the streams: none starts now
	}
}

func (h *legacyHost) stopListen() {
	h.listenMu.Lock()
	defer h.listenMu.Unlock()
	h.stopListenLocked()
}

func (h *legacyHost) stopListenLocked() {
	if h.listen != nil {
		h.listen.cancel()
		<-h.listen.done
		h.listen = nil
	}
}

// filter builds the notifications filter of subscriptions/listen, nil when
// there is nothing to ask for.
func (h *legacyHost) filter() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.caps
	if !c.toolsListChanged && !c.promptsListChanged && !c.resourcesListChanged && len(h.subs) == 0 {
		return nil
	}
	return translate.AppendNotifications(nil, c.toolsListChanged, c.promptsListChanged, c.resourcesListChanged, slices.Sorted(maps.Keys(h.subs)))
}

// listenLoop keeps a listen stream open until ctx ends. A broken stream
// is a lost request that "clients MUST re-issue ... as a new request with
// a new request ID" (2026-07-28 changelog), after a growing pause.
func (h *legacyHost) listenLoop(ctx context.Context, filter []byte) {
	b := h.b
	bo := listenBackoff()
	for {
		h.mu.Lock()
		meta := translate.EnvelopeFields(h.version, h.hs.caps, h.hs.info, "")
		h.mu.Unlock()
		id := b.mintID("listen")
		params := append(append(append(append([]byte(`{"_meta":{`), meta...), `},"notifications":`...), filter...), '}')
		body := wire.Request(id, "subscriptions/listen", params)
		var m wire.Message
		if wire.Parse(body, &m) != nil {
			return
		}
		resp, err := b.client.Post(ctx, body, b.headersFor(&m))
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
		if !sleepCtx(ctx, wait) {
			return
		}
	}
}

// drainListen passes the notifications of one listen stream to the host,
// without the acknowledgement (a legacy host has no such notification) and
// without the subscription id in _meta.
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
		case m.Kind != wire.KindNotification || m.Method == "notifications/subscriptions/acknowledged":
		case m.SubscriptionID.Present():
			b.write(wire.WithoutFields(msg, m.Meta, wire.MetaSubscriptionID))
		default:
			b.write(msg)
		}
	}
}
