package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// maxBacklog bounds the server-initiated messages a session holds while no
// stream is open to carry them.
const maxBacklog = 1000

// sessionTable owns the legacy (2025-xx) sessions.
type sessionTable struct {
	h      *Handler
	mu     sync.Mutex
	byID   map[string]*session
	shared *child.LegacyShared // SessionShared mode only
	empty  []chan struct{}     // whenEmpty's, closed when the last session ends
}

func newSessionTable(h *Handler) *sessionTable {
	t := &sessionTable{h: h, byID: map[string]*session{}}
	if h.cfg.sessionMode() == SessionShared {
		t.shared = child.NewLegacyShared(h.env, t.childSessions)
	}
	return t
}

// A session is one legacy client: an Mcp-Session-Id, a child connection
// (its own child, or the shared legacy child), its GET stream, and its
// requests in flight.
type session struct {
	id    string
	t     *sessionTable
	conn  *child.Conn
	host  *stdiohost.Host // own child; nil when shared
	log   zerolog.Logger
	endCh chan struct{}

	// tr is set when the child speaks only 2026-07-28: the session is
	// translated onto the shared modern child (see session_translate.go).
	tr *legacysession.Session
	sc *child.Shared // the modern child a translated session rides on

	replay *stream.ReplayLog // nil: resumability disabled

	// sse is the HTTP+SSE stream the session was initialized on (sse.go);
	// nil for a Streamable HTTP session.
	sse *sseConn
	// entry is the session's client when it is in this process
	// (Handler.Open): its streams go to the Conn message by message
	// (entry.go). nil for an HTTP client.
	entry *Conn

	// owner is the principal that initialized the session; a request of
	// another one does not find it. Security best practices (session
	// hijacking): "MCP servers SHOULD bind session IDs to user-specific
	// information".
	owner auth.Principal

	mu         sync.Mutex
	version    string
	get        *stream.Sink
	backlog    [][]byte
	backlogLen int                    // bytes in backlog
	pending    []*child.Call          // in arrival order
	byOrig     map[string]*child.Call // client request id -> its call in flight
	attached   int                    // requests being served and streams open
	lastActive time.Time              // when attached last dropped to zero
	ended      bool
}

// newSessionID returns a random id, prefixed with "replica." when the
// Handler names its replica (Config.ReplicaID).
func newSessionID(replica string) string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand: 2025-11-25 security: "MUST use secure, non-deterministic session IDs"
	if replica == "" {
		return hex.EncodeToString(b[:])
	}
	return replica + "." + hex.EncodeToString(b[:])
}

// whenEmpty returns a channel closed once the table holds no session.
func (t *sessionTable) whenEmpty() <-chan struct{} {
	ch := make(chan struct{})
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) == 0 {
		close(ch)
	} else {
		t.empty = append(t.empty, ch)
	}
	return ch
}

func (t *sessionTable) lookup(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// all returns the sessions, for work that must not hold the table's lock.
func (t *sessionTable) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := make([]*session, 0, len(t.byID))
	for _, s := range t.byID {
		ss = append(ss, s)
	}
	return ss
}

func (t *sessionTable) pending() int {
	n := 0
	for _, s := range t.all() {
		s.mu.Lock()
		n += len(s.pending)
		s.mu.Unlock()
	}
	return n
}

// sessionFor resolves the Mcp-Session-Id of a non-initialize request,
// answering 400 or 404 itself when there is no usable session.
func (t *sessionTable) sessionFor(w http.ResponseWriter, r *http.Request, id []byte) *session {
	sid := r.Header.Get(wire.HeaderSessionID)
	if sid == "" {
		// 2025-11-25 transports §Session management: servers that require a
		// session id "SHOULD respond to requests without an Mcp-Session-Id
		// header (other than initialization) with HTTP 400 Bad Request".
		writeError(w, http.StatusBadRequest, id, wire.CodeConnectionClosed, "Bad Request: Mcp-Session-Id header is required (send initialize first, or use the 2026-07-28 _meta envelope)", nil)
		return nil
	}
	s := t.lookup(sid)
	if s != nil && (s.owner.Key() != t.h.guard.principal(r).Key() || s.sse != sseOf(r)) {
		// Another principal's, or one of the other transport: as good as
		// not there.
		s = nil
	}
	if s == nil {
		// "MUST respond to requests containing that session ID with HTTP 404".
		writeError(w, http.StatusNotFound, id, wire.CodeRequestTimeout, "Session not found", nil)
		return nil
	}
	if pv := strings.TrimSpace(r.Header.Get(wire.HeaderProtocolVersion)); pv != "" && !translate.IsLegacy(pv) {
		// 2025-06-18 transports §Protocol version header: an invalid or
		// unsupported MCP-Protocol-Version "MUST" get 400 Bad Request.
		writeError(w, http.StatusBadRequest, id, wire.CodeInvalidRequest, "Bad Request: unsupported MCP-Protocol-Version "+pv, nil)
		return nil
	}
	s.attach()
	// The client is attached for as long as its request is being received
	// or its stream is open; the request's context ends with either.
	context.AfterFunc(r.Context(), s.detach)
	return s
}

func (t *sessionTable) servePost(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	if m.Method == "initialize" {
		if r.Header.Get(wire.HeaderSessionID) != "" {
			writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request: initialize must be sent without Mcp-Session-Id", nil)
			return
		}
		if m.Kind != wire.KindRequest {
			writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: initialize must be a request", nil)
			return
		}
		t.initialize(w, r, m)
		return
	}
	if m.Kind == wire.KindNotification && r.Header.Get(wire.HeaderSessionID) == "" {
		// A notification outside any session: 2026-07-28 clients (the Go
		// SDK's, for one) still POST notifications/cancelled after closing
		// the stream. The closed stream already cancelled the request, and a
		// bare requestId cannot be attributed to one client safely, so the
		// notification is accepted and dropped; a 400 would make such
		// clients tear down their connection.
		t.h.log.Debug().Str("method", m.Method).Msg("session-less notification accepted and ignored")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s := t.sessionFor(w, r, m.IDBytes())
	if s == nil {
		return
	}
	switch m.Kind {
	case wire.KindRequest:
		s.request(w, r, m)
	case wire.KindNotification:
		s.notify(m)
		w.WriteHeader(http.StatusAccepted)
	case wire.KindResponse:
		if s.tr != nil {
			s.translatedResponse(m)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		// A client's answer to a server-to-client request; with a shared
		// child, only to one delivered to this session.
		ok, err := s.relayResponse(m)
		switch {
		case !ok:
			s.log.Debug().RawJSON("id", m.IDBytes()).Msg("response to no server request of this session; refused")
			writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: the response answers no request sent to this session", nil)
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, nil, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}
}

func (t *sessionTable) initialize(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	if _, ok := t.h.shared.Translating(r.Context()); !ok {
		notReady(w, r, m.IDBytes(), t.h.shared)
		return
	}
	if t.count() >= t.h.cfg.maxSessions() && !t.evict() {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many sessions", nil)
		return
	}
	s := &session{
		id:         newSessionID(t.h.cfg.ReplicaID),
		t:          t,
		endCh:      make(chan struct{}),
		byOrig:     map[string]*child.Call{},
		lastActive: time.Now(),
		attached:   1, // by this initialize request, however long the child takes
		replay:     stream.NewReplayLog(t.h.cfg.replayBuffer(), t.h.replays),
		owner:      t.h.guard.principal(r),
		entry:      entryConn(r),
	}
	// A session that never makes it into the table (the child cannot
	// start, is not ready, too many principals) must not leave its replay
	// log in the shared budget: 50 failed initializes were 50 logs kept
	// for good. One that did is ended by end, which closes it.
	defer func() {
		if t.lookup(s.id) == nil {
			s.replay.Close()
			s.sse.unadopt(s)
		}
	}()
	if !t.h.adoptSSE(w, r, m, s) {
		return
	}
	context.AfterFunc(r.Context(), s.detach)
	lc := t.h.log.With().Str("session", s.id[len(s.id)-32:][:8])
	if s.owner != (auth.Principal{}) {
		lc = lc.Stringer("principal", s.owner)
	}
	s.log = lc.Logger()
	if !t.h.shared.SpeaksLegacy() {
		s.sc = t.h.childFor(r)
		if s.sc == nil {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many principals have a child of their own (--max-principals)", nil)
			return
		}
		if s.sc.Connection(r.Context()) == nil {
			notReady(w, r, m.IDBytes(), s.sc)
			return
		}
		t.initializeTranslated(w, m, s)
		return
	}
	if t.shared != nil {
		t.initializeShared(w, r, m, s)
		return
	}
	conn, host := t.h.warm.Take(s)
	var err error
	if conn == nil {
		conn = child.NewConn(&t.h.env.IDs, s, s.log)
		host, err = t.h.env.StartHost(conn)
	}
	if err != nil {
		s.log.Error().Err(err).Msg("cannot start MCP server for a new session")
		writeError(w, http.StatusInternalServerError, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: cannot start the MCP server: "+err.Error(), nil)
		return
	}
	s.conn, s.host = conn, host
	if !t.h.life.Go(func() { s.watchChild(host, conn) }) {
		// Close began while this initialize was on its way in.
		host.Close()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge is shutting down", nil)
		return
	}
	t.add(s)
	client := initializeClient(m)
	// A failed handshake leaves nothing to keep, but the child's error is
	// this initialize's answer: the session ends once that answer is
	// written (requestWith returned), not beside it, where ending first
	// answered the client "session ended" instead of the child's reason.
	// An answer that comes after the client left ends it at once.
	var (
		endMu            sync.Mutex
		failed, returned bool
	)
	defer func() {
		endMu.Lock()
		returned = true
		f := failed
		endMu.Unlock()
		if f {
			s.end("initialize failed")
		}
	}()
	s.requestWith(w, r, m, func(resp *wire.Message) bool {
		if resp.Error.Present() {
			endMu.Lock()
			failed = true
			late := returned
			endMu.Unlock()
			if late {
				// Refused only once Close has ended every session.
				t.h.life.Go(func() { s.end("initialize failed") })
			}
			return false
		}
		if v, ok := wire.StringField(resp.Raw, resp.Result, "protocolVersion"); ok {
			s.mu.Lock()
			s.version = v
			s.mu.Unlock()
		}
		s.logStarted(client)
		return false
	})
}

func (t *sessionTable) add(s *session) {
	t.mu.Lock()
	t.byID[s.id] = s
	t.mu.Unlock()
	if s.sse != nil {
		s.sse.bind(s)
	}
}

func (s *session) attach() {
	s.mu.Lock()
	s.attached++
	s.mu.Unlock()
}

// detach ends one attachment; the idle clock starts when none is left.
func (s *session) detach() {
	s.mu.Lock()
	if s.attached--; s.attached == 0 {
		s.lastActive = time.Now()
	}
	s.mu.Unlock()
}

func (s *session) request(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	if s.tr != nil {
		s.translatedRequest(w, r, m)
		return
	}
	if l := s.t.shared; l != nil && (m.Method == "resources/subscribe" || m.Method == "resources/unsubscribe") {
		// A shared child holds one subscription per resource for all
		// sessions; only the first subscribe and the last unsubscribe reach it.
		if !l.Subscribe(s, m.URI, m.Method == "resources/subscribe") {
			w.Header().Set("Content-Type", "application/json")
			w.Write(wire.ResultResponse(m.IDBytes(), []byte("{}")))
			return
		}
	}
	s.requestWith(w, r, m, nil)
}

// requestWith relays one request and streams the child's answer, together
// with whatever the child sends while it is pending, back on the POST.
func (s *session) requestWith(w http.ResponseWriter, r *http.Request, m *wire.Message, onFinal func(*wire.Message) bool) {
	h := s.t.h
	cl := &child.Call{OrigID: clone(m.IDBytes()), Method: m.Method, Sink: s.callSink(1), Sess: s, Via: s.sc, OnFinal: onFinal, LogLevel: m.LogLevel != "", Op: opOf(w)}
	if ew := s.entryOf(r); ew != nil {
		ew.out(cl, cl.Sink) // the child's parse goes along (entry.go)
	}
	if !s.trackOr404(w, cl, m) {
		return
	}
	if err := s.child().Start(cl, m); err != nil {
		s.Settled(cl)
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
		return
	}
	rsp := stream.NewResponder(w, false)
	if m.Method == "initialize" {
		rsp.SetSessionID(s.id)
	} else if m.ProgressToken.Present() {
		// A call that asked for progress is a long one by its client's
		// account: its stream leaves net/http at its first wait, as a
		// 2026-07-28 one does (stream/detach.go).
		rsp.MayDetach(r, true)
	}
	// 2025-11-25 transports: "Disconnection SHOULD NOT be interpreted as
	// the client cancelling its request." The call stays pending at the
	// child; its answer waits for the client to resume the stream.
	method, who := m.Method, h.guard.principal(r)
	s.stream(r, rsp, cl.Sink, func() { h.logCall(method, who, cl) })
}

// track registers cl under the session before it is sent, so that a
// notifications/cancelled naming the client's id can be translated.
func (s *session) track(cl *child.Call, m *wire.Message) bool {
	cl.ChildID = s.t.h.env.IDs.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.pending = append(s.pending, cl)
	s.byOrig[string(cl.OrigID)] = cl
	return true
}

// trackOr404 tracks cl, or answers 404 when the session ended after the
// request found it (DELETE, idle timeout or child exit in between).
func (s *session) trackOr404(w http.ResponseWriter, cl *child.Call, m *wire.Message) bool {
	if s.track(cl, m) {
		return true
	}
	writeError(w, http.StatusNotFound, m.IDBytes(), wire.CodeRequestTimeout, "Session not found", nil)
	return false
}

// Settled is called (on the child's reader goroutine) for the final
// message delivered to cl: it retires cl from the session.
func (s *session) Settled(cl *child.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.pending, cl); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
	}
	if s.byOrig[string(cl.OrigID)] == cl {
		delete(s.byOrig, string(cl.OrigID))
	}
}

// pendingCall returns the call in flight under a client request id, or nil.
func (s *session) pendingCall(origID []byte) *child.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byOrig[string(origID)]
}

// child returns the connection the session's requests go to.
func (s *session) child() *child.Conn {
	if s.tr != nil {
		if c := s.sc.Current(); c != nil {
			return c
		}
		return child.Gone
	}
	return s.conn
}

// notify relays a client notification. A cancellation names the client's
// request id, which the child knows under the bridge's id.
func (s *session) notify(m *wire.Message) {
	if s.tr != nil && s.translatedNotify(m) {
		return
	}
	msg := clone(m.Raw)
	if m.Method == "notifications/cancelled" && m.RequestID.Present() {
		cl := s.pendingCall(m.Bytes(m.RequestID))
		if cl == nil {
			s.log.Debug().Bytes("request_id", m.Bytes(m.RequestID)).Msg("cancellation of no pending request ignored")
			return
		}
		msg = wire.Splice(m.Raw, wire.Edit{Span: m.RequestID, Value: wire.AppendInt(nil, cl.ChildID)})
		// The client has given up on the request: its answer, if any, is
		// not wanted, and its stream can end.
		if s.child().Take(cl.ChildID) != nil {
			s.Settled(cl)
			cl.Sink.End()
		} else if s.tr != nil && s.tr.DropOwner(string(cl.OrigID)) {
			// The child answered already (with an input round) and the bridge
			// is waiting for the client's input: nothing runs at the
			// child to cancel, so only the round and the call end here.
			s.Settled(cl)
			cl.Sink.End()
			return
		}
	}
	if m.Method == "notifications/initialized" && s.t.shared != nil {
		return // the bridge already initialized the shared child itself
	}
	if err := s.child().Send(msg); err != nil {
		s.log.Debug().Err(err).Str("method", m.Method).Msg("notification not delivered")
	}
}

// Unrouted and ChildRequest make a session the owner of its own child:
// everything the child sends belongs to this one client.
func (s *session) Unrouted(c *child.Conn, m *wire.Message) {
	s.routeParsed(m, m.Method == "notifications/message")
}

func (s *session) ChildRequest(c *child.Conn, m *wire.Message) {
	s.routeParsed(m, true)
}

// routeParsed routes a copy of m's message with edits applied; an
// in-process client gets the parse along (entry.go), re-based past the
// edits (wire.SpliceParsed).
func (s *session) routeParsed(m *wire.Message, related bool, edits ...wire.Edit) {
	var pm *wire.Message
	if s.entry != nil {
		pm = new(wire.Message)
	}
	s.routeWith(wire.SpliceParsed(nil, m, pm, edits...), pm, related)
}

// route places a server-initiated message on one stream (the spec forbids
// broadcasting it: 2025-11-25 transports, "MUST send each of its JSON-RPC
// messages on only one of the connected streams"). Messages that relate to
// a request in flight (server-to-client requests, log lines) prefer that
// request's stream; the rest prefer the GET stream. With no stream open
// they wait in a bounded backlog for the next GET.
func (s *session) route(msg []byte, related bool) { s.routeWith(msg, nil, related) }

// routeWith is route for msg with its parse pm, or nil.
func (s *session) routeWith(msg []byte, pm *wire.Message, related bool) {
	s.mu.Lock()
	get := s.get
	pend := slices.Clone(s.pending)
	s.mu.Unlock()
	if related {
		for _, cl := range pend {
			if !s.replay.IsParked(cl.Sink) && s.push(cl.Sink, msg, pm) {
				return
			}
		}
	}
	if get != nil && s.push(get, msg, pm) {
		return
	}
	if !related {
		for _, cl := range pend {
			if !s.replay.IsParked(cl.Sink) && s.push(cl.Sink, msg, pm) {
				return
			}
		}
	}
	s.mu.Lock()
	// Bounded in count and in bytes (what one stream may hold).
	dropped := 0
	for len(s.backlog) > 0 && (len(s.backlog) >= maxBacklog || s.backlogLen+len(msg) > s.t.h.lim.PerStream()) {
		s.backlogLen -= len(s.backlog[0])
		s.backlog[0] = nil
		s.backlog = s.backlog[1:]
		dropped++
	}
	s.backlog = append(s.backlog, msg)
	s.backlogLen += len(msg)
	s.mu.Unlock()
	if dropped > 0 {
		s.t.h.warn.Warn(s.log, "backlog_full").Int("dropped", dropped).Msg("session backlog full; oldest server messages dropped")
	}
}

// end terminates the session: it is forgotten (later requests get 404), its
// streams close, requests still pending are cancelled at a shared child,
// and its own child is shut down.
func (s *session) end(reason string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	pend := s.pending
	s.pending = nil
	s.mu.Unlock()
	t := s.t
	t.mu.Lock()
	delete(t.byID, s.id)
	if len(t.byID) == 0 {
		for _, ch := range t.empty {
			close(ch)
		}
		t.empty = nil
	}
	t.mu.Unlock()
	// Every request still pending gets its one response before the
	// streams close.
	msg := "mcp-bridge: session ended: " + reason
	if s.tr != nil {
		s.tr.Close()
	}
	for _, cl := range pend {
		// Cancelled toward the child even when the child is the session's
		// own and about to stop: it may hold resources for the call.
		s.child().Cancel(cl, "session ended")
		cl.Sink.Push(wire.ErrorResponse(cl.OrigID, wire.CodeInternalError, msg, nil), true)
	}
	if s.host != nil {
		s.conn.FailAll(msg, nil)
	}
	if t.shared != nil {
		t.shared.Forget(s)
	}
	close(s.endCh)
	s.replay.Close()
	s.log.Info().Str("reason", reason).Msg("session ended")
	if s.host != nil && !t.h.life.Go(func() { s.host.Close() }) {
		s.host.Close() // Close is waiting: stop the child here
	}
}

// watchChild ends the session once its own child exits.
func (s *session) watchChild(host *stdiohost.Host, conn *child.Conn) {
	<-host.Done()
	conn.FailAll("mcp-bridge: the MCP server process exited", host.Err())
	s.end("MCP server process exited")
}

func (t *sessionTable) serveDelete(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(wire.HeaderSessionID) == "" {
		writeError(w, http.StatusBadRequest, nil, wire.CodeConnectionClosed, "Bad Request: Mcp-Session-Id header is required", nil)
		return
	}
	s := t.sessionFor(w, r, nil)
	if s == nil {
		return
	}
	s.end("deleted by client")
	w.WriteHeader(http.StatusNoContent)
}

// closeAll ends every session (Handler.Close).
func (t *sessionTable) closeAll() {
	for _, s := range t.all() {
		s.end("mcp-bridge is shutting down")
	}
	if t.shared != nil {
		t.shared.Close()
	}
}
