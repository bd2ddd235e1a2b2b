package legacysession

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A legacy server sends notifications/{tools,prompts,resources}/list_changed
// unasked when it advertised listChanged, and notifications/resources/updated
// for URIs the client subscribed to. A 2026-07-28 server sends them only on
// a subscriptions/listen stream, for the kinds the client names ("The server
// MUST NOT send notification types the client has not explicitly
// requested", basic/patterns/subscriptions). So once the legacy side is
// initialized the session keeps one listen stream open for what the peer
// advertises plus the legacy side's subscriptions, and the face passes its
// notifications on as ordinary legacy ones.

// changeCaps is what a DiscoverResult advertises of change notifications.
type changeCaps struct {
	tools, prompts, resources, subscribe bool
}

func parseChangeCaps(discover []byte) changeCaps {
	type listChanged struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	}
	var r struct {
		Capabilities struct {
			Tools     listChanged `json:"tools"`
			Prompts   listChanged `json:"prompts"`
			Resources listChanged `json:"resources"`
		} `json:"capabilities"`
	}
	if len(discover) > 0 {
		json.Unmarshal(discover, &r)
	}
	c := r.Capabilities
	return changeCaps{c.Tools.ListChanged, c.Prompts.ListChanged, c.Resources.ListChanged, c.Resources.Subscribe}
}

// subscribe adds or removes uri from the subscribed set; the listen stream
// follows the set once the legacy side is initialized. It reports false
// when the set is full.
func (s *Session) subscribe(uri string, on bool) bool {
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]bool{}
	}
	if on && !s.subs[uri] && len(s.subs) >= MaxSubscriptions {
		s.mu.Unlock()
		return false
	}
	changed := s.subs[uri] != on
	if on {
		s.subs[uri] = true
	} else {
		delete(s.subs, uri)
	}
	ready := s.ready
	s.mu.Unlock()
	if changed && ready {
		s.RestartListen()
	}
	return true
}

// Filter builds the notifications filter of subscriptions/listen: the
// list_changed kinds the peer advertises and the resources the legacy side
// subscribed to (when the peer offers subscriptions); nil when there is
// nothing to ask for.
func (s *Session) Filter() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.change
	var uris []string
	if c.subscribe {
		uris = slices.Sorted(maps.Keys(s.subs))
	}
	if !c.tools && !c.prompts && !c.resources && len(uris) == 0 {
		return nil
	}
	return translate.AppendNotifications(nil, c.tools, c.prompts, c.resources, uris)
}

// ListenParams returns the params of a subscriptions/listen request for
// filter, in the session's envelope.
func (s *Session) ListenParams(filter []byte) []byte {
	params := append(append([]byte(`{"_meta":{`), s.EnvelopeFields(nil)...), `},"notifications":`...)
	return append(append(params, filter...), '}')
}

// RestartListen replaces the listen stream with one for the current filter
// (or none if there is nothing to listen for).
func (s *Session) RestartListen() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	s.stopListenLocked()
	filter := s.Filter()
	if filter == nil || s.listener == nil || s.closed {
		return
	}
	s.stop = s.listener.OpenListen(filter)
}

// StopListen ends the listen stream.
func (s *Session) StopListen() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	s.stopListenLocked()
}

func (s *Session) stopListenLocked() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// ListenNotification returns a message of a listen stream as the legacy
// side must see it, nil for none: notifications only, without the
// acknowledgement (a legacy peer has no such notification) and without the
// subscription id in _meta.
func ListenNotification(m *wire.Message) []byte { return ListenNotificationParsed(m, nil) }

// ListenNotificationParsed is ListenNotification that also sets *out, when
// out is not nil and the result is not nil, to the result parsed, from m
// (wire.WithoutSubscriptionID): the in-process entry hands that parse to
// the aggregate, which would otherwise parse the message again.
func ListenNotificationParsed(m, out *wire.Message) []byte {
	if m.Kind != wire.KindNotification || m.Method == "notifications/subscriptions/acknowledged" {
		return nil
	}
	return wire.WithoutSubscriptionID(m, out)
}
