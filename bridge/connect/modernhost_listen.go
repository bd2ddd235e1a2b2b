package connect

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A 2026-07-28 host receives change notifications only on a
// subscriptions/listen request it keeps open; a legacy server sends them
// unasked, on the GET stream or any open stream. The bridge serves each
// listen request itself: it acknowledges the subset it can honour (what
// the remote advertised), subscribes the remote to the requested resource
// URIs, and hands each change notification to the listeners that asked for
// its kind, tagged with their subscription id. The listen ends when the
// host cancels it (stdio: notifications/cancelled with its id).

// listener is one host subscriptions/listen request.
type listener struct {
	id                       []byte // the listen request's id: the subscription id
	tools, prompts, resource bool
	uris                     map[string]bool
}

// changeNotification reports whether method is one listen streams carry.
func changeNotification(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		return true
	}
	return false
}

func (l *listener) wants(m *wire.Message) bool {
	switch m.Method {
	case "notifications/tools/list_changed":
		return l.tools
	case "notifications/prompts/list_changed":
		return l.prompts
	case "notifications/resources/list_changed":
		return l.resource
	case "notifications/resources/updated":
		return l.uris[m.URI]
	}
	return false
}

// listen serves a host's subscriptions/listen until the host cancels it or
// leaves.
func (h *modernHost) listen(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	if err := h.ensureSession(ctx, m); err != nil {
		b.answerError(p, err)
		return
	}
	var f struct {
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			PromptsListChanged    bool     `json:"promptsListChanged"`
			ResourcesListChanged  bool     `json:"resourcesListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if m.Params.Present() {
		json.Unmarshal(m.Bytes(m.Params), &f)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.setOnCancel(p, cancel)
	if p.cancelled.Load() {
		return
	}
	// "Notification types the server does not support are omitted" from
	// the acknowledgement: the remote's capabilities say what it sends.
	caps := h.remoteCaps()
	l := &listener{id: p.id, uris: map[string]bool{},
		tools:    f.Notifications.ToolsListChanged && caps.toolsListChanged,
		prompts:  f.Notifications.PromptsListChanged && caps.promptsListChanged,
		resource: f.Notifications.ResourcesListChanged && caps.resourcesListChanged,
	}
	var uris []string
	if caps.resourcesSubscribe {
		for _, u := range f.Notifications.ResourceSubscriptions {
			if l.uris[u] {
				continue
			}
			if err := h.subscribe(ctx, u); err != nil {
				b.log.Info().Err(err).Str("uri", u).Msg("the remote refused a resource subscription")
				continue
			}
			l.uris[u] = true
			uris = append(uris, u)
		}
	}
	defer func() {
		for _, u := range uris {
			h.unsubscribe(u)
		}
	}()
	ack := h.ackFor(l, uris)
	// "The server MUST send notifications/subscriptions/acknowledged as the
	// first message carrying the subscription's ID": it is written before
	// the listener can receive anything.
	h.mu.Lock()
	b.write(ack)
	h.listeners = append(h.listeners, l)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.listeners = slices.DeleteFunc(h.listeners, func(x *listener) bool { return x == l })
		h.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
	case <-b.streamCtx.Done():
	}
}

// ackFor builds the acknowledgement of l.
func (h *modernHost) ackFor(l *listener, uris []string) []byte {
	a := append([]byte(`{"_meta":{"`+wire.MetaSubscriptionID+`":`), l.id...)
	a = append(a, `},"notifications":`...)
	a = translate.AppendNotifications(a, l.tools, l.prompts, l.resource, uris)
	a = append(a, '}')
	return wire.Notification("notifications/subscriptions/acknowledged", a)
}

// broadcast hands a change notification to the listeners that asked for
// it, each copy tagged with the listener's subscription id ("All
// notifications delivered on the stream carry
// io.modelcontextprotocol/subscriptionId in _meta").
func (h *modernHost) broadcast(m *wire.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.listeners {
		if !l.wants(m) {
			continue
		}
		field := append([]byte(`"`+wire.MetaSubscriptionID+`":`), l.id...)
		h.b.write(wire.WithMetaFields(m, field))
	}
}

// subscribe subscribes the remote session to uri for one more listener.
func (h *modernHost) subscribe(ctx context.Context, uri string) error {
	h.mu.Lock()
	n := h.subs[uri]
	h.subs[uri] = n + 1
	h.mu.Unlock()
	if n > 0 {
		return nil
	}
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	if err := h.request(ctx, "resources/subscribe", params); err != nil {
		h.mu.Lock()
		if h.subs[uri]--; h.subs[uri] <= 0 {
			delete(h.subs, uri)
		}
		h.mu.Unlock()
		return err
	}
	return nil
}

// unsubscribe drops one listener's interest in uri, unsubscribing the
// remote when it was the last. Nothing is sent once the host has left: the
// session is about to be deleted anyway.
func (h *modernHost) unsubscribe(uri string) {
	h.mu.Lock()
	h.subs[uri]--
	last := h.subs[uri] <= 0
	if last {
		delete(h.subs, uri)
	}
	h.mu.Unlock()
	if !last || h.b.streamCtx.Err() != nil {
		return
	}
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	ctx, cancel := context.WithTimeout(h.b.streamCtx, probeTimeout)
	defer cancel()
	if err := h.request(ctx, "resources/unsubscribe", params); err != nil {
		h.b.log.Debug().Err(err).Str("uri", uri).Msg("resources/unsubscribe")
	}
}
