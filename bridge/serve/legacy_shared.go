package serve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// legacyShared is the one child that all legacy sessions share in
// SessionShared mode. The bridge performs the handshake itself, with the
// first client's initialize params, and answers every session's initialize
// from that result; after a crash the child is restarted and initialized
// again with the same params, so the sessions survive.
type legacyShared struct {
	h    *Handler
	conn *childConn // one connection object across restarts

	mu         sync.Mutex
	started    bool
	initParams []byte
	result     []byte // cached InitializeResult
	version    string
	initErr    error
	readyCh    chan struct{} // closed after the first handshake (ok or not)
	subs       map[string]map[*session]bool
	cancel     context.CancelFunc
	ctx        context.Context // the supervisor's: a start ends with it

	asks legacyAsks
}

func newLegacyShared(h *Handler) *legacyShared {
	l := &legacyShared{h: h, readyCh: make(chan struct{}), subs: map[string]map[*session]bool{}}
	l.conn = newChildConn(&h.ids, l, h.log.With().Str("child", "legacy-shared").Logger())
	return l
}

func (l *legacyShared) initialize(w http.ResponseWriter, r *http.Request, m *wire.Message, s *session) {
	l.mu.Lock()
	if !l.started {
		l.started = true
		if m.Params.Present() {
			l.initParams = clone(m.Bytes(m.Params))
		} else {
			l.initParams = []byte("{}")
		}
		ctx, cancel := context.WithCancel(context.Background())
		l.ctx, l.cancel = ctx, cancel
		sup := &stdiohost.Supervisor{Start: l.launch, OnExit: l.exited, InitialBackoff: l.h.cfg.RestartBackoff, Logger: l.h.log, Watch: l.h.crash}
		if !l.h.life.Go(func() { sup.Run(ctx) }) {
			// Close began while this initialize was on its way in.
			cancel()
			l.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge is shutting down", nil)
			return
		}
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), l.h.cfg.startTimeout())
	defer cancel()
	select {
	case <-l.readyCh:
	case <-ctx.Done():
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: the shared MCP server did not finish initializing", nil)
		return
	}
	l.mu.Lock()
	result, version, err := l.result, l.version, l.initErr
	l.mu.Unlock()
	if result == nil {
		// It is tried again after a backoff (launch): come back then.
		msg := "mcp-bridge: the shared MCP server failed to initialize"
		if err != nil {
			msg += ": " + err.Error()
		}
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, msg, nil)
		return
	}
	s.conn = l.conn
	s.version = version
	l.h.sessions.add(s)
	s.logStarted(initializeClient(m))
	w.Header().Set(wire.HeaderSessionID, s.id)
	w.Header().Set("Content-Type", "application/json")
	w.Write(wire.ResultResponse(m.IDBytes(), result))
}

// launch starts the child and performs the handshake on the bridge's behalf.
func (l *legacyShared) launch() (*stdiohost.Host, error) {
	l.conn.revive()
	host, err := startHost(l.h, l.conn)
	if err != nil {
		l.finishInit(nil, "", err)
		return nil, err
	}
	l.mu.Lock()
	params, run := l.initParams, l.ctx
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(run, l.h.cfg.startTimeout())
	defer cancel()
	resp, err := l.conn.request(ctx, "initialize", params)
	if err == nil && resp.Error.Present() {
		err = errors.New(string(resp.Bytes(resp.Error)))
	}
	switch {
	case err != nil:
		l.finishInit(nil, "", err)
		if run.Err() == nil {
			// Stopped and started again after the supervisor's backoff: a
			// child that missed its handshake would stay unusable.
			l.h.log.Warn().Err(err).Msg("shared MCP server did not initialize; stopping it and retrying")
			host.Close()
		}
	default:
		version, _ := wire.StringField(resp.Raw, resp.Result, "protocolVersion")
		l.conn.send(wire.Notification("notifications/initialized", nil))
		l.finishInit(clone(resp.Bytes(resp.Result)), version, nil)
	}
	return host, nil
}

func (l *legacyShared) finishInit(result []byte, version string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if result != nil || l.result == nil {
		l.result, l.version, l.initErr = result, version, err
	}
	select {
	case <-l.readyCh:
	default:
		close(l.readyCh)
	}
}

func (l *legacyShared) exited(host *stdiohost.Host) {
	l.conn.failAll("mcp-bridge: the MCP server process exited", host.Err())
}

func (l *legacyShared) close() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// unrouted fans a server-wide notification (list_changed, a resource
// update) out to the sessions it concerns: a resource update to the
// sessions subscribed to that resource, anything else to every session. A
// log message belongs to whichever call produced it, so it goes only where
// that is unambiguous (see owner); so does a URL elicitation's completion,
// which "MUST only be sent to the client that initiated the elicitation
// request" (SEP-1036).
func (l *legacyShared) unrouted(c *childConn, m *wire.Message) {
	if m.Method == "notifications/message" || m.Method == translate.MethodElicitationComplete {
		if s := l.owner(); s != nil {
			s.route(clone(m.Raw), true)
		} else {
			c.log.Debug().Msg("log message with several sessions in flight: not attributable, dropped")
		}
		return
	}
	targets := l.h.sessions.all()
	if owner, bound, ok := c.taskNotificationOwner(m); ok {
		// A task's status (its result, in SEP-2663) is its owner's alone.
		targets = slices.DeleteFunc(targets, func(s *session) bool { return !bound || s.owner.Key() != owner })
	}
	if m.Method == "notifications/resources/updated" {
		uri, _ := wire.StringField(m.Raw, m.Params, "uri")
		l.mu.Lock()
		subs := l.subs[uri]
		l.mu.Unlock()
		targets = slices.DeleteFunc(targets, func(s *session) bool { return !subs[s] })
	}
	for _, s := range targets {
		s.route(clone(m.Raw), false)
	}
}

// childRequest hands a server-to-client request (sampling, elicitation,
// roots) to the session it must belong to. stdio carries no link between
// such a request and the call that caused it, so with several sessions in
// flight the bridge cannot know, and a wrong guess would show one client's
// prompt to another. It refuses instead; --session-mode per-session has no
// such ambiguity.
func (l *legacyShared) childRequest(c *childConn, m *wire.Message) {
	s := l.owner()
	if s == nil {
		c.warn.Warn(c.log, "unattributed_request").Str("method", m.Method).Msg("shared child asked a client while several sessions are in flight; refused (use --session-mode per-session)")
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError,
			"mcp-bridge: "+m.Method+" cannot be attributed to one client of a shared child; run the bridge with --session-mode per-session", nil))
		return
	}
	msg := l.asks.mint(s, m)
	if msg == nil {
		c.warn.Warn(c.log, "too_many_asks").Str("method", m.Method).Int("unanswered", maxAsks).Msg("shared child has too many unanswered server-to-client requests; refused")
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many unanswered server-to-client requests", nil))
		return
	}
	s.route(msg, true)
}

// answer relays a session's response to one of the child's requests; it
// reports false for a response to no request delivered to that session.
func (l *legacyShared) answer(s *session, m *wire.Message) (bool, error) {
	msg, ok := l.asks.answer(s, m)
	if !ok {
		return false, nil
	}
	return true, l.conn.send(l.conn.internalAnswer(msg)) // task ids: tasks.go
}

// owner returns the one session with requests in flight, or the only
// session there is; nil when that is ambiguous.
func (l *legacyShared) owner() *session {
	all := l.h.sessions.all()
	if len(all) == 1 {
		return all[0]
	}
	var found *session
	for _, s := range all {
		s.mu.Lock()
		busy := len(s.pending) > 0
		s.mu.Unlock()
		if busy {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// subscribe keeps the child's resource subscriptions reference-counted
// across sessions; it reports whether the request must reach the child.
func (l *legacyShared) subscribe(s *session, uri string, on bool) (forward bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.subs[uri]
	if on {
		if set == nil {
			set = map[*session]bool{}
			l.subs[uri] = set
		}
		set[s] = true
		return len(set) == 1
	}
	if !set[s] {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(l.subs, uri)
		return true
	}
	return false
}

// forget drops an ended session's subscriptions, and answers the child's
// requests still waiting for it.
func (l *legacyShared) forget(s *session) {
	for _, id := range l.asks.drop(s) {
		l.conn.send(wire.ErrorResponse(id, wire.CodeInternalError, "mcp-bridge: the session this request was for has ended", nil))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for uri, set := range l.subs {
		delete(set, s)
		if len(set) == 0 {
			delete(l.subs, uri)
		}
	}
}
