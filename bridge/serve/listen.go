package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// listenHub serves 2026-07-28 subscriptions/listen for a legacy child,
// whose change notifications are unsolicited and session-wide: the bridge
// fans each one out to the listen streams that asked for its kind.
type listenHub struct {
	s    *sharedChild
	mu   sync.Mutex
	subs map[*listener]bool
	uris map[string]int // resources/subscribe references held at the child
}

type listener struct {
	id                        []byte // the listen request's id: the subscription id
	sink                      *stream.Sink
	tools, prompts, resources bool
	uris                      map[string]bool
}

// changeCaps are the change notifications a child can send, from its
// advertised capabilities.
type changeCaps struct{ tools, prompts, resources, subscribe bool }

// changeCapabilities reads them from the DiscoverResult clients get.
func (s *sharedChild) changeCapabilities() changeCaps {
	var r struct {
		Capabilities struct {
			Tools     struct{ ListChanged bool } `json:"tools"`
			Prompts   struct{ ListChanged bool } `json:"prompts"`
			Resources struct {
				ListChanged bool `json:"listChanged"`
				Subscribe   bool `json:"subscribe"`
			} `json:"resources"`
		} `json:"capabilities"`
	}
	json.Unmarshal(s.discoverResult(), &r)
	c := r.Capabilities
	return changeCaps{c.Tools.ListChanged, c.Prompts.ListChanged, c.Resources.ListChanged, c.Resources.Subscribe}
}

// listenFilter is params.notifications of subscriptions/listen.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// serveLegacyListen answers a modern subscriptions/listen in front of a
// legacy child. 2026-07-28 subscriptions: the server "MUST send
// notifications/subscriptions/acknowledged as the first message", listing
// the honoured subset, and "MUST NOT send notification types the client has
// not explicitly requested".
func (h *Handler) serveLegacyListen(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *sharedChild, conn *childConn) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if m.Params.Present() {
		json.Unmarshal(m.Bytes(m.Params), &p)
	}
	c := sc.changeCapabilities()
	want := p.Notifications
	honoured := listenFilter{
		ToolsListChanged:     want.ToolsListChanged && c.tools,
		PromptsListChanged:   want.PromptsListChanged && c.prompts,
		ResourcesListChanged: want.ResourcesListChanged && c.resources,
	}
	if c.subscribe {
		honoured.ResourceSubscriptions = want.ResourceSubscriptions
	}
	l := &listener{
		id: clone(m.IDBytes()), sink: h.newSink(1),
		tools: honoured.ToolsListChanged, prompts: honoured.PromptsListChanged, resources: honoured.ResourcesListChanged,
		uris: map[string]bool{},
	}
	for _, u := range honoured.ResourceSubscriptions {
		l.uris[u] = true
	}
	// A listen stream the bridge serves itself is no call at the child, but
	// it is a request in flight like one (--max-inflight).
	h.lim.Started()
	defer h.lim.Ended(1)
	hub := &sc.listen
	hub.add(r.Context(), conn, l)
	defer hub.remove(conn, l)

	hj, _ := json.Marshal(honoured)
	ack := append(append([]byte(`{"_meta":{"io.modelcontextprotocol/subscriptionId":`), l.id...), `},"notifications":`...)
	ack = append(append(ack, hj...), '}')
	l.sink.Push(wire.Notification("notifications/subscriptions/acknowledged", ack), false)
	rsp := stream.NewResponder(w, true)
	if h.streams.Pump(r.Context(), rsp, l.sink, h.refusing.Done(), nil) == stream.PumpStopped {
		// Graceful closure (subscriptions §Closing): the listen result.
		rsp.Event(wire.ResultResponse(l.id, append(append([]byte(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":`), l.id...), "}}"...)))
	}
}

func (hub *listenHub) add(ctx context.Context, conn *childConn, l *listener) {
	hub.mu.Lock()
	if hub.subs == nil {
		hub.subs, hub.uris = map[*listener]bool{}, map[string]int{}
	}
	hub.subs[l] = true
	var first []string
	for u := range l.uris {
		if hub.uris[u]++; hub.uris[u] == 1 {
			first = append(first, u)
		}
	}
	hub.mu.Unlock()
	for _, u := range first {
		hub.subscribe(ctx, conn, "resources/subscribe", u)
	}
}

func (hub *listenHub) remove(conn *childConn, l *listener) {
	hub.mu.Lock()
	delete(hub.subs, l)
	var last []string
	for u := range l.uris {
		if hub.uris[u]--; hub.uris[u] <= 0 {
			delete(hub.uris, u)
			last = append(last, u)
		}
	}
	hub.mu.Unlock()
	l.sink.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range last {
		hub.subscribe(ctx, conn, "resources/unsubscribe", u)
	}
}

func (hub *listenHub) subscribe(ctx context.Context, conn *childConn, method, uri string) {
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	if _, err := conn.request(ctx, method, params); err != nil {
		hub.s.h.log.Warn().Err(err).Str("uri", uri).Str("method", method).Msg("resource subscription at the child failed")
	}
}

// resubscribe restores the child's resource subscriptions after a restart.
func (hub *listenHub) resubscribe(conn *childConn) {
	hub.mu.Lock()
	uris := make([]string, 0, len(hub.uris))
	for u := range hub.uris {
		uris = append(uris, u)
	}
	hub.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range uris {
		hub.subscribe(ctx, conn, "resources/subscribe", u)
	}
}

// deliver fans a change notification out to the listeners that asked for
// it, each tagged with its own subscription id. It reports whether m was a
// change notification.
func (hub *listenHub) deliver(m *wire.Message) bool {
	var match func(l *listener) bool
	switch m.Method {
	case "notifications/tools/list_changed":
		match = func(l *listener) bool { return l.tools }
	case "notifications/prompts/list_changed":
		match = func(l *listener) bool { return l.prompts }
	case "notifications/resources/list_changed":
		match = func(l *listener) bool { return l.resources }
	case "notifications/resources/updated":
		uri, _ := wire.StringField(m.Raw, m.Params, "uri")
		match = func(l *listener) bool { return l.uris[uri] }
	default:
		return false
	}
	hub.mu.Lock()
	var to []*listener
	for l := range hub.subs {
		if match(l) {
			to = append(to, l)
		}
	}
	hub.mu.Unlock()
	for _, l := range to {
		field := append([]byte(`"io.modelcontextprotocol/subscriptionId":`), l.id...)
		l.sink.Push(wire.WithMetaFields(m, field), false)
	}
	return true
}
