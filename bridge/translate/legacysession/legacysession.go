// Package legacysession plays a 2025 session in front of a peer that
// speaks only 2026-07-28 (stateless), written once for both faces: serve
// (a 2025 HTTP session client in front of a 2026-only stdio child) and
// connect (a 2025 stdio host in front of a 2026-only remote). The legacy
// side keeps its session semantics; the modern peer sees stateless
// requests:
//
//   - initialize is answered from the peer's server/discover;
//   - every forwarded request carries the per-request envelope built from
//     the legacy side's initialize ("fields marked as required MUST be
//     included on every request", 2026-07-28 basic/index §_meta);
//   - what 2026-07-28 removed is answered here: ping, logging/setLevel
//     (kept as the logLevel the envelope carries), resources/subscribe and
//     unsubscribe (kept as the URI set of a subscriptions/listen stream,
//     which also carries the list_changed notifications a legacy server
//     would send unasked; legacysession_listen.go);
//   - an InputRequiredResult becomes real server-to-client requests under
//     ids the session mints, and their answers become the retry's
//     inputResponses with the exact requestState (legacysession_rounds.go).
//
// The Session holds the state and makes every decision; the faces own the
// control flow and the transport: how a request reaches the modern peer
// and its response comes back, how a message reaches the legacy side, and
// how a listen stream is opened and closed (Listener).
package legacysession

import (
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Limits of one session: every set the session keeps has a bound.
const (
	// MaxInputRounds bounds the input rounds of one request.
	MaxInputRounds = 16
	// MaxRoundInputs bounds the input requests of one round.
	MaxRoundInputs = 64
	// MaxOpenInputs bounds the input requests a session has open.
	MaxOpenInputs = 256
	// MaxSubscriptions bounds the resource subscriptions a session keeps
	// (each is a URI in its listen filter).
	MaxSubscriptions = translate.MaxSubscriptions
)

// Listener is what differs between the faces in a session's change
// notifications: opening a subscriptions/listen stream at the modern peer.
type Listener interface {
	// OpenListen opens a listen stream whose params.notifications is
	// filter (params built by Session.ListenParams) and returns what ends
	// it; stop returns once the stream is gone. The face passes each
	// message of the stream through ListenNotification to the legacy side.
	OpenListen(filter []byte) (stop func())
}

// Session is the state of one legacy session in front of a modern peer.
type Session struct {
	listener Listener
	// maxAnswerBytes bounds the answers of one round, which the retry
	// carries in one message to the peer (0: no bound of its own).
	maxAnswerBytes int

	mu          sync.Mutex
	hostVersion string // protocolVersion of the legacy side's initialize
	caps, info  []byte // its capabilities and clientInfo, raw
	modern      string // the modern version spoken to the peer ("" before discovery)
	discover    []byte // the peer's DiscoverResult (the result object), nil if none
	change      changeCaps
	tasks       bool // the DiscoverResult offers the Tasks extension
	level       string
	subs        map[string]bool // resource URIs the legacy side subscribed to
	ready       bool            // the legacy side sent notifications/initialized
	inputs      map[string]*Round
	next        int

	listenMu sync.Mutex // serializes (re)starting the listen stream
	stop     func()
	closed   bool // Close ran: no listen stream opens any more (listenMu)
}

// New returns a session whose listen streams l opens; maxAnswerBytes
// bounds the answers of one input round (0: none).
func New(l Listener, maxAnswerBytes int) *Session {
	return &Session{listener: l, maxAnswerBytes: maxAnswerBytes}
}

// Handshake takes the legacy side's initialize request (its params'
// protocolVersion, capabilities and clientInfo) and forgets what the
// session kept from an earlier one: log level, subscriptions, readiness,
// discovery. It ends the listen stream of the earlier handshake.
func (s *Session) Handshake(init *wire.Message) {
	version, caps, info := translate.InitializeOf(init)
	s.mu.Lock()
	s.hostVersion, s.caps, s.info = version, caps, info
	s.modern, s.discover, s.change, s.tasks = "", nil, changeCaps{}, false
	s.level, s.subs, s.ready = "", nil, false
	s.mu.Unlock()
	s.StopListen()
}

// Discovered takes what the peer's server/discover said: the modern
// version spoken to it and its DiscoverResult (the result object).
func (s *Session) Discovered(modern string, discover []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modern, s.discover = modern, discover
	s.change = parseChangeCaps(discover)
	s.tasks = false
	var m wire.Message
	if discover != nil && wire.Parse(wire.ResultResponse([]byte("0"), discover), &m) == nil {
		caps, ok := wire.Field(m.Raw, m.Result, "capabilities")
		s.tasks = ok && translate.ModernTasks(m.Bytes(caps))
	}
}

// OffersTasks reports whether the peer's DiscoverResult offers the Tasks
// extension (the legacy side may then call tools as tasks).
func (s *Session) OffersTasks() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks
}

// Known reports whether the peer was discovered.
func (s *Session) Known() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modern != ""
}

// Version is the legacy version negotiated with the legacy side.
func (s *Session) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return translate.NegotiateLegacy(s.hostVersion)
}

// Handshook returns what the legacy side declared in its initialize: its
// capabilities and clientInfo, raw (nil if it sent none).
func (s *Session) Handshook() (caps, info []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps, s.info
}

// Discover returns the peer's DiscoverResult (nil if none).
func (s *Session) Discover() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discover
}

// InitializeResult answers the legacy side's initialize from the peer's
// DiscoverResult: its capabilities, instructions and serverInfo (which
// 2026-07-28 carries in the result's _meta), tasks in the 2025-11-25 form.
func (s *Session) InitializeResult() []byte {
	s.mu.Lock()
	version, disc := translate.NegotiateLegacy(s.hostVersion), s.discover
	s.mu.Unlock()
	return translate.TasksToLegacy(translate.InitializeFromDiscover(disc, version), disc)
}

// Answer answers request m (id is the legacy side's id) when 2026-07-28
// removed its method, and reports whether it did; the other requests are
// forwarded (Forward).
func (s *Session) Answer(id []byte, m *wire.Message) ([]byte, bool) {
	switch m.Method {
	case "ping":
		// Removed in 2026-07-28; the receiver "MUST respond promptly with
		// an empty response" (2025-11-25 basic/utilities/ping).
		return wire.ResultResponse(id, []byte("{}")), true
	case "logging/setLevel":
		level, ok := wire.StringField(m.Raw, m.Params, "level")
		if !ok || level == "" {
			return wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: level is required", nil), true
		}
		// 2026-07-28 carries the level per request, in _meta
		// io.modelcontextprotocol/logLevel; every later request gets it.
		s.mu.Lock()
		s.level = level
		s.mu.Unlock()
		return wire.ResultResponse(id, []byte("{}")), true
	case "resources/subscribe", "resources/unsubscribe":
		if m.URI == "" {
			return wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: uri is required", nil), true
		}
		if !s.subscribe(m.URI, m.Method == "resources/subscribe") {
			return wire.ErrorResponse(id, wire.CodeInternalError, "mcp-bridge: too many resource subscriptions in this session", nil), true
		}
		return wire.ResultResponse(id, []byte("{}")), true
	}
	return nil, false
}

// Notify handles a notification of the legacy side and reports whether it
// was one the session plays; the face drops the others, since 2026-07-28
// defines no client notification but cancellation ("this revision defines
// no client-to-server notifications", streamable-http §Sending Messages).
func (s *Session) Notify(method string) bool {
	switch method {
	case "notifications/initialized":
		// Nothing to tell a stateless peer; the session's change
		// notifications start flowing now.
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
		s.RestartListen()
		return true
	case "notifications/roots/list_changed":
		return true // roots travel in input rounds in 2026-07-28
	}
	return false
}

// EnvelopeFields returns the members of the 2026-07-28 _meta envelope of
// request m: the modern version, the capabilities and identity the legacy
// side declared in its initialize (a task-augmented tools/call declares
// the Tasks extension, so that the peer may answer with a task), and its
// log level once it set one. m may be nil (a request of the bridge's own).
func (s *Session) EnvelopeFields(m *wire.Message) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	caps := s.caps
	if m != nil && m.Method == "tools/call" && translate.IsAugmented(m) {
		caps = translate.CapsWithTasks(caps)
	}
	return translate.EnvelopeFields(s.modernVersion(), caps, s.info, s.level)
}

// modernVersion is the version of the envelope; s.mu held.
func (s *Session) modernVersion() string {
	if s.modern == "" {
		return translate.Modern
	}
	return s.modern
}

// Forward returns request m in the 2026-07-28 form: with the session's
// envelope in its _meta. The bridge's envelope wins over one the legacy
// side sent: the peer must see one version. The result is a fresh slice,
// which input rounds may keep.
func (s *Session) Forward(m *wire.Message) ([]byte, error) {
	fields := s.EnvelopeFields(m)
	msg := *m
	for _, k := range translate.EnvelopeKeys {
		if _, ok := wire.Field(m.Raw, m.Meta, k); ok {
			raw := wire.WithoutFields(m.Raw, m.Meta, translate.EnvelopeKeys...)
			if err := wire.Parse(raw, &msg); err != nil {
				return nil, err
			}
			break
		}
	}
	return wire.WithMetaFields(&msg, fields), nil
}

// Close ends the session's listen stream for good and forgets its input
// rounds: a message of the legacy side handled after it opens no stream.
func (s *Session) Close() {
	s.listenMu.Lock()
	s.closed = true
	s.stopListenLocked()
	s.listenMu.Unlock()
	s.mu.Lock()
	for id, r := range s.inputs {
		delete(s.inputs, id)
		r.finish()
	}
	s.mu.Unlock()
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
