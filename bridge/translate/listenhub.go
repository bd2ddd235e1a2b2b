package translate

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Listen streams of a 2026-07-28 peer (the front) on a legacy peer (the
// back), for both faces: serve's modern clients of a legacy child, and
// connect's modern host of a legacy remote.
//
// A 2026-07-28 client receives change notifications only on a
// subscriptions/listen request it keeps open; a legacy server sends them
// unasked and session-wide, on the GET stream or any open stream. The
// bridge serves each listen request itself: it acknowledges the subset it
// can honour (what the back advertised), subscribes the back to the
// requested resource URIs (resources/subscribe, counted across listeners),
// and hands each change notification to the listeners that asked for its
// kind, tagged with their subscription id. The listen ends when the client
// cancels it (HTTP: it closes the stream; stdio: notifications/cancelled
// with its id) or leaves; the face then closes the listener.

// ChangeCaps are the change notifications a legacy back sends, from the
// capabilities it advertised, and whether it takes resource subscriptions.
type ChangeCaps struct{ Tools, Prompts, Resources, Subscribe bool }

// ParseChangeCaps reads ChangeCaps from a capabilities object.
func ParseChangeCaps(capabilities []byte) ChangeCaps {
	var c struct {
		Tools     struct{ ListChanged bool } `json:"tools"`
		Prompts   struct{ ListChanged bool } `json:"prompts"`
		Resources struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
	}
	if len(capabilities) > 0 {
		json.Unmarshal(capabilities, &c)
	}
	return ChangeCaps{c.Tools.ListChanged, c.Prompts.ListChanged, c.Resources.ListChanged, c.Resources.Subscribe}
}

// ListenBack is the legacy back as a ListenHub sees it; each face adapts
// its transport (serve: the child's stdio; connect: the remote's session).
type ListenBack interface {
	// ChangeCaps returns what the back advertised.
	ChangeCaps() ChangeCaps
	// Subscribe sends resources/subscribe for uri; an error (the back
	// refused it, or could not be asked) leaves uri out of the listen.
	Subscribe(ctx context.Context, uri string) error
	// Unsubscribe sends resources/unsubscribe for uri, best effort.
	Unsubscribe(uri string)
}

// ListenHub fans a legacy back's change notifications out to the listen
// streams that asked for their kind, and holds the back's resource
// subscriptions while a listener wants them. The zero value is ready.
type ListenHub struct {
	mu   sync.Mutex
	subs []*Listener    // registration order: each notification reaches them in it
	uris map[string]int // resources/subscribe references held at the back
	// pending are the URIs whose first resources/subscribe is unanswered:
	// closed when it is; until then the URI is not known to be held.
	pending map[string]chan struct{}
}

// Listener is one front subscriptions/listen request.
type Listener struct {
	id                        []byte // the listen request's id: the subscription id
	deliver                   func(msg []byte)
	back                      ListenBack
	tools, prompts, resources bool
	uris                      map[string]bool // held at the back
}

// listenFilter is params.notifications of subscriptions/listen.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

// Open starts a listener for the subscriptions/listen request m, whose id
// is id, in front of back; deliver takes every message of its stream. It
// delivers the acknowledgement before it returns. 2026-07-28
// subscriptions: the server "MUST send
// notifications/subscriptions/acknowledged as the first message", listing
// the honoured subset ("Notification types the server does not support are
// omitted"), and "MUST NOT send notification types the client has not
// explicitly requested".
//
// deliver is called with the hub's lock held, so it must not block for
// long (a bounded queue, a serialized write) and must not call the hub; in
// exchange nothing reaches it after Close returns. ctx bounds the
// resources/subscribe requests.
func (hub *ListenHub) Open(ctx context.Context, back ListenBack, m *wire.Message, id []byte, deliver func(msg []byte)) *Listener {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if m.Params.Present() {
		json.Unmarshal(m.Bytes(m.Params), &p)
	}
	want := p.Notifications
	c := back.ChangeCaps()
	l := &Listener{id: id, deliver: deliver, back: back,
		tools:     want.ToolsListChanged && c.Tools,
		prompts:   want.PromptsListChanged && c.Prompts,
		resources: want.ResourcesListChanged && c.Resources,
	}
	var uris []string // the honoured ones, in the request's order
	if c.Subscribe {
		l.uris = map[string]bool{}
		for _, u := range want.ResourceSubscriptions {
			if len(l.uris) >= MaxSubscriptions {
				break
			}
			if l.uris[u] || hub.hold(ctx, back, u) != nil {
				continue
			}
			l.uris[u] = true
			uris = append(uris, u)
		}
	}
	ack := append([]byte(`{"_meta":{"`+wire.MetaSubscriptionID+`":`), id...)
	ack = append(ack, `},"notifications":`...)
	ack = AppendNotifications(ack, l.tools, l.prompts, l.resources, uris)
	ack = wire.Notification("notifications/subscriptions/acknowledged", append(ack, '}'))
	// The acknowledgement goes out before the listener can receive
	// anything: both under the lock Deliver takes.
	hub.mu.Lock()
	deliver(ack)
	hub.subs = append(hub.subs, l)
	hub.mu.Unlock()
	return l
}

// hold subscribes the back to uri for one more listener. While another
// listener's resources/subscribe of uri is unanswered it waits for the
// answer: the back may refuse it.
func (hub *ListenHub) hold(ctx context.Context, back ListenBack, uri string) error {
	hub.mu.Lock()
	for ch := hub.pending[uri]; ch != nil; ch = hub.pending[uri] {
		hub.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		hub.mu.Lock()
	}
	if hub.uris == nil {
		hub.uris, hub.pending = map[string]int{}, map[string]chan struct{}{}
	}
	n := hub.uris[uri]
	hub.uris[uri] = n + 1
	if n > 0 {
		hub.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	hub.pending[uri] = done
	hub.mu.Unlock()
	err := back.Subscribe(ctx, uri)
	hub.mu.Lock()
	delete(hub.pending, uri)
	close(done)
	if err != nil {
		hub.release(uri)
	}
	hub.mu.Unlock()
	return err
}

// release drops one reference to uri and reports whether it was the last.
// hub.mu is held.
func (hub *ListenHub) release(uri string) bool {
	if hub.uris[uri]--; hub.uris[uri] > 0 {
		return false
	}
	delete(hub.uris, uri)
	return true
}

// Close ends listener l: nothing more reaches it, and the back is
// unsubscribed from the URIs no other listener holds.
func (hub *ListenHub) Close(l *Listener) {
	hub.mu.Lock()
	hub.subs = slices.DeleteFunc(hub.subs, func(x *Listener) bool { return x == l })
	var last []string
	for u := range l.uris {
		if hub.release(u) {
			last = append(last, u)
		}
	}
	hub.mu.Unlock()
	for _, u := range last {
		l.back.Unsubscribe(u)
	}
}

// Resubscribe restores the resource subscriptions the hub holds at a back
// that lost them (serve: a restarted child).
func (hub *ListenHub) Resubscribe(ctx context.Context, back ListenBack) {
	hub.mu.Lock()
	uris := make([]string, 0, len(hub.uris))
	for u := range hub.uris {
		uris = append(uris, u)
	}
	hub.mu.Unlock()
	for _, u := range uris {
		back.Subscribe(ctx, u)
	}
}

// Deliver fans a change notification out to the listeners that asked for
// it, each copy tagged with the listener's subscription id ("All
// notifications delivered on the stream carry
// io.modelcontextprotocol/subscriptionId in _meta"). It reports whether m
// was a change notification.
func (hub *ListenHub) Deliver(m *wire.Message) bool {
	switch m.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
	default:
		return false
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	for _, l := range hub.subs {
		if !l.wants(m) {
			continue
		}
		field := append([]byte(`"`+wire.MetaSubscriptionID+`":`), l.id...)
		l.deliver(wire.WithMetaFields(m, field))
	}
	return true
}

func (l *Listener) wants(m *wire.Message) bool {
	switch m.Method {
	case "notifications/tools/list_changed":
		return l.tools
	case "notifications/prompts/list_changed":
		return l.prompts
	case "notifications/resources/list_changed":
		return l.resources
	case "notifications/resources/updated":
		return l.uris[m.URI]
	}
	return false
}

// Closing is the listen request's response when the bridge ends the
// stream on its own initiative (subscriptions §Graceful Closure: the
// server "SHOULD respond to the original subscriptions/listen request with
// a completion result before closing the stream").
func (l *Listener) Closing() []byte {
	r := append([]byte(`{"resultType":"complete","_meta":{"`+wire.MetaSubscriptionID+`":`), l.id...)
	return wire.ResultResponse(l.id, append(r, "}}"...))
}

// AppendNotifications appends the notifications object of
// subscriptions/listen, a filter or its acknowledgement: the list_changed
// kinds that are on, then the resource URIs.
func AppendNotifications(dst []byte, tools, prompts, resources bool, uris []string) []byte {
	dst = append(dst, '{')
	n := len(dst)
	add := func(k string) {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"`+k+`":true`...)
	}
	if tools {
		add("toolsListChanged")
	}
	if prompts {
		add("promptsListChanged")
	}
	if resources {
		add("resourcesListChanged")
	}
	if len(uris) > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"resourceSubscriptions":[`...)
		for i, u := range uris {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendString(dst, u)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
