package serve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"

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
		l.cancel = cancel
		sup := &stdiohost.Supervisor{Start: l.launch, OnExit: l.exited, InitialBackoff: l.h.cfg.RestartBackoff, Logger: l.h.log}
		l.h.wg.Go(func() { sup.Run(ctx) })
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), l.h.cfg.probeTimeout())
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
		msg := "mcp-bridge: the shared MCP server failed to initialize"
		if err != nil {
			msg += ": " + err.Error()
		}
		writeError(w, http.StatusInternalServerError, m.IDBytes(), wire.CodeInternalError, msg, nil)
		return
	}
	s.conn = l.conn
	s.version = version
	l.h.sessions.add(s)
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
	ctx, cancel := context.WithTimeout(context.Background(), l.h.cfg.probeTimeout())
	defer cancel()
	l.mu.Lock()
	params := l.initParams
	l.mu.Unlock()
	resp, err := l.conn.request(ctx, "initialize", params)
	switch {
	case err != nil:
		l.finishInit(nil, "", err)
	case resp.Error.Present():
		l.finishInit(nil, "", errors.New(string(resp.Bytes(resp.Error))))
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

func (l *legacyShared) sessions() []*session {
	t := l.h.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.byID))
	for _, s := range t.byID {
		out = append(out, s)
	}
	return out
}

// unrouted fans a server notification out to the sessions it concerns: a
// resource update to the sessions subscribed to that resource, anything
// else to every session.
func (l *legacyShared) unrouted(c *childConn, m *wire.Message) {
	targets := l.sessions()
	if m.Method == "notifications/resources/updated" {
		uri, _ := wire.StringField(m.Raw, m.Params, "uri")
		l.mu.Lock()
		subs := l.subs[uri]
		l.mu.Unlock()
		targets = slices.DeleteFunc(targets, func(s *session) bool { return !subs[s] })
	}
	related := m.Method == "notifications/message"
	for _, s := range targets {
		s.route(clone(m.Raw), related)
	}
}

// childRequest hands a server-to-client request to the session whose
// request has waited longest: stdio gives no way to tell which request
// caused it, and the oldest is the likeliest. Per-session mode has no such
// guesswork.
func (l *legacyShared) childRequest(c *childConn, m *wire.Message) {
	var best *session
	var oldest *call
	for _, s := range l.sessions() {
		s.mu.Lock()
		if len(s.pending) > 0 && (oldest == nil || s.pending[0].started.Before(oldest.started)) {
			best, oldest = s, s.pending[0]
		}
		s.mu.Unlock()
	}
	if best == nil {
		if all := l.sessions(); len(all) > 0 {
			best = all[0]
		}
	}
	if best == nil {
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: no client session to ask", nil))
		return
	}
	best.route(clone(m.Raw), true)
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

// forget drops an ended session's subscriptions.
func (l *legacyShared) forget(s *session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for uri, set := range l.subs {
		delete(set, s)
		if len(set) == 0 {
			delete(l.subs, uri)
		}
	}
}
