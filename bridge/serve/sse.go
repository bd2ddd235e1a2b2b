package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The HTTP+SSE transport of 2024-11-05 (deprecated since 2025-03-26, to be
// removed by the clock of 2026-07-28 deprecated.mdx and SEP-2596) is one
// more face of the 2025 sessions, not a second bridge. A GET on the SSE
// path opens the stream; its first event, "endpoint", names the message
// URL (transports §HTTP with SSE: "When a client connects, the server MUST
// send an endpoint event containing a URI for the client to use for
// sending messages"). A POST there is what a POST with Mcp-Session-Id is
// on the Streamable HTTP path — the same validation, budgets, translation
// and telemetry, run by servePost itself — except that whatever it answers
// goes on the stream ("Server messages are sent as SSE message events")
// and the POST gets 202, or its own error status when the message was
// refused before reaching the session.
//
// The session is created by the initialize POSTed on the stream and takes
// the stream's id; the stream is the session's GET stream (session.get),
// and every call's sink forwards to it (session.callSink), so that the
// routing of server messages (session.route) needs no rule of its own.
// Closing the stream ends the session, which cancels its pending
// requests: the transport has no resumption.

// sseKey is the request context key of the stream a POST belongs to.
type sseKey struct{}

// sseOf returns the HTTP+SSE stream r was POSTed for, or nil.
func sseOf(r *http.Request) *sseConn {
	c, _ := r.Context().Value(sseKey{}).(*sseConn)
	return c
}

// sseConns are a Handler's open HTTP+SSE streams.
type sseConns struct {
	ssePath, msgPath string // both "" when the transport is off

	mu   sync.Mutex
	byID map[string]*sseConn
}

// ErrSSEPath is returned by New for an HTTP+SSE path that cannot be served.
var ErrSSEPath = errors.New("serve: bad HTTP+SSE path")

// init works out the transport's paths: SSEPath (or "sse" next to Path)
// and "message" in the same directory.
func (cs *sseConns) init(cfg *Config) error {
	if cfg.NoSSE {
		return nil
	}
	p := cfg.SSEPath
	if p == "" {
		p = path.Join(path.Dir(cfg.path()), "sse")
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("%w: %q must be an absolute path", ErrSSEPath, p)
	}
	msg := path.Join(path.Dir(p), "message")
	if p == cfg.path() || msg == cfg.path() || p == msg {
		return fmt.Errorf("%w: %q (and its message path %q) must differ from the MCP path %q", ErrSSEPath, p, msg, cfg.path())
	}
	cs.ssePath, cs.msgPath = p, msg
	cs.byID = map[string]*sseConn{}
	return nil
}

// SSEPaths returns the HTTP+SSE transport's stream and message paths; both
// empty when it is off.
func (h *Handler) SSEPaths() (stream, message string) { return h.sse.ssePath, h.sse.msgPath }

func (h *Handler) isSSEPath(p string) bool {
	return h.sse.ssePath != "" && (p == h.sse.ssePath || p == h.sse.msgPath)
}

func (cs *sseConns) lookup(id string) *sseConn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byID[id]
}

// waiting counts the streams that have no session yet: they hold a
// connection and count against --max-sessions as sessions do.
func (cs *sseConns) waiting() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, c := range cs.byID {
		c.mu.Lock()
		if c.sess == nil {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// An sseConn is one open HTTP+SSE stream and, once initialized, its
// session.
type sseConn struct {
	id    string
	h     *Handler
	owner auth.Principal
	sink  *stream.Sink  // the stream's queue; the session's GET stream
	endCh chan struct{} // the session's endCh: the stream ends with it

	mu      sync.Mutex
	adopted *session // the session being initialized, or initialized
	sess    *session // once in the table
	closed  bool
	timer   *time.Timer // ends a stream that never initializes
}

func (h *Handler) serveSSE(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == h.sse.ssePath && r.Method == http.MethodGet:
		h.openSSE(w, r)
	case r.URL.Path == h.sse.msgPath && r.Method == http.MethodPost:
		h.postSSE(w, r)
	default:
		allow := http.MethodGet
		if r.URL.Path == h.sse.msgPath {
			allow = http.MethodPost
		}
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, nil, wire.CodeInvalidRequest, "Method not allowed", nil)
	}
}

// openSSE serves a GET on the SSE path: the endpoint event, then whatever
// the session sends, until the client goes, the session ends or the
// Handler shuts down.
func (h *Handler) openSSE(w http.ResponseWriter, r *http.Request) {
	if h.sessions.count()+h.sse.waiting() >= h.cfg.maxSessions() {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, nil, wire.CodeInternalError, "mcp-bridge: too many sessions", nil)
		return
	}
	c := &sseConn{id: newSessionID(h.cfg.ReplicaID), h: h, owner: h.guard.principal(r), sink: h.newSink(-1), endCh: make(chan struct{})}
	h.sse.mu.Lock()
	h.sse.byID[c.id] = c
	h.sse.mu.Unlock()
	rsp := stream.NewResponder(w, false)
	// Like a 2025 session's GET stream, it mostly waits: it leaves net/http
	// while it does (stream/detach.go).
	rsp.MayDetach(r, false)
	err := rsp.StartSSE()
	if err == nil {
		err = rsp.Send([]byte("event: endpoint\ndata: " + h.sse.msgPath + "?sessionId=" + c.id + "\n\n"))
	}
	if err != nil {
		c.close()
		return
	}
	if idle := h.cfg.idleTimeout(); idle > 0 {
		c.mu.Lock()
		c.timer = time.AfterFunc(idle, c.expire)
		c.mu.Unlock()
	}
	h.streams.PumpDetachable(r, rsp, c.sink, c.endCh, h.closing.Done(), func(stream.PumpResult) { c.close() })
}

// expire ends a stream that has had no initialize for the idle timeout: it
// would hold a connection and a session's place for good.
func (c *sseConn) expire() {
	c.mu.Lock()
	idle := c.adopted == nil
	c.mu.Unlock()
	if idle {
		c.sink.End()
	}
}

// close ends the stream: the session ends with it (its pending requests
// are cancelled at the child) and its id is forgotten.
func (c *sseConn) close() {
	c.mu.Lock()
	c.closed = true
	s, t := c.sess, c.timer
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	c.h.sse.mu.Lock()
	delete(c.h.sse.byID, c.id)
	c.h.sse.mu.Unlock()
	c.sink.Close()
	if s != nil {
		s.end("SSE stream closed")
	}
}

// adoptSSE makes s, being initialized, the session of the stream its
// initialize was POSTed for (if any): s takes the stream's id and ends
// with it, and keeps no replay log (the transport cannot resume). One
// stream carries one session: a second initialize is refused.
func (h *Handler) adoptSSE(w http.ResponseWriter, r *http.Request, m *wire.Message, s *session) bool {
	c := sseOf(r)
	if c == nil {
		return true
	}
	c.mu.Lock()
	if c.adopted != nil || c.closed {
		c.mu.Unlock()
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request: this SSE stream has a session already; open another stream for another", nil)
		return false
	}
	c.adopted = s
	c.mu.Unlock()
	s.replay.Close()
	s.replay = nil
	s.id, s.sse, s.endCh = c.id, c, c.endCh
	return true
}

// unadopt lets the stream take another initialize after s failed to start
// (a child that could not start, one not ready yet: the client retries).
func (c *sseConn) unadopt(s *session) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.adopted == s && c.sess == nil {
		c.adopted = nil
	}
	c.mu.Unlock()
}

// bind makes the stream s's GET stream once s is in the table. The stream
// holds an attachment for as long as it is open (it is never given back:
// the session ends with the stream).
func (c *sseConn) bind(s *session) {
	c.mu.Lock()
	c.sess = s
	closed := c.closed
	c.mu.Unlock()
	s.mu.Lock()
	s.get = c.sink
	s.attached++
	// What its child sent before the session was in the table (an own
	// child starts first) waited in the backlog, as for a GET to come.
	backlog := s.backlog
	s.backlog, s.backlogLen = nil, 0
	s.mu.Unlock()
	for _, m := range backlog {
		c.sink.Push(m, false)
	}
	if closed { // the client left while the session started
		s.end("SSE stream closed")
	}
}

// callSink returns the sink of a request's answers: its own stream's for
// a Streamable HTTP session, for an HTTP+SSE one a sink that forwards to
// the session's stream ("the server MUST send an endpoint event ... Server
// messages are sent as SSE message events"), with its own end, so that a
// cancelled call ends without ending the stream.
func (s *session) callSink(want int) *stream.Sink {
	sk := s.t.h.newSink(want)
	if s.sse != nil {
		sk.ForwardTo(s.sse.sink)
	}
	return sk
}

// accepted answers the POST of a request whose answers go on the stream
// (through its sink, which forwards there: callSink). The request's
// telemetry ends with the POST, as the access log's line does: the
// transport has no response of the request's own to measure.
func (c *sseConn) accepted(rsp *stream.Responder) {
	rsp.WriteHeader(http.StatusAccepted)
}

// postSSE serves a POST on the message path: servePost with the stream's
// session, its answer captured for the stream.
func (h *Handler) postSSE(w http.ResponseWriter, r *http.Request) {
	c := h.sse.lookup(r.URL.Query().Get("sessionId"))
	if c != nil && c.owner.Key() != h.guard.principal(r).Key() {
		// Another principal's stream is as good as not there: a 403 would
		// confirm that the id exists.
		c = nil
	}
	if c == nil {
		writeError(w, http.StatusNotFound, nil, wire.CodeRequestTimeout, "Session not found", nil)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), sseKey{}, c))
	r.Header = r.Header.Clone()
	// The session is named by the URL only: a header of the client's own
	// must not reach another session.
	r.Header.Del(wire.HeaderSessionID)
	c.mu.Lock()
	bound := c.sess != nil
	c.mu.Unlock()
	if bound {
		r.Header.Set(wire.HeaderSessionID, c.id)
	}
	// The transport's clients need not offer SSE on a POST: nothing comes
	// back on it.
	r.Header.Set("Accept", "application/json, text/event-stream")
	rw := &sseReply{w: w, hdr: http.Header{}}
	h.servePost(rw, r)
	rw.finish(c)
}

// An sseReply stands in for the ResponseWriter of a POST on the message
// path: a refusal (a status of 400 or more) is the POST's answer; anything
// else — a JSON message written directly, such as an initialize result or
// an error in a 200 — goes on the stream, and the POST gets 202.
type sseReply struct {
	w      http.ResponseWriter
	hdr    http.Header
	status int
	body   []byte
}

func (rw *sseReply) Header() http.Header { return rw.hdr }

func (rw *sseReply) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
}

func (rw *sseReply) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	rw.body = append(rw.body, b...)
	return len(b), nil
}

func (rw *sseReply) finish(c *sseConn) {
	if rw.status >= 400 {
		for _, k := range []string{"Content-Type", "Retry-After", "Allow"} {
			if v := rw.hdr.Get(k); v != "" {
				rw.w.Header().Set(k, v)
			}
		}
		rw.w.WriteHeader(rw.status)
		rw.w.Write(rw.body)
		return
	}
	rw.w.WriteHeader(http.StatusAccepted)
	if len(rw.body) > 0 {
		c.sink.Push(rw.body, false)
	}
}
