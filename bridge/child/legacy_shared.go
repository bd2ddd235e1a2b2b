package child

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// LegacyShared is the one child that all legacy sessions share in
// SessionShared mode. The bridge performs the handshake itself, with the
// first client's initialize params, and answers every session's initialize
// from that result; after a crash the child is restarted and initialized
// again with the same params, so the sessions survive.
type LegacyShared struct {
	env  *Env
	conn *Conn // one connection object across restarts
	// sessions returns the sessions of the front (serve's table); they
	// all share this child.
	sessions func() []Session

	mu         sync.Mutex
	started    bool
	initParams []byte
	result     []byte // cached InitializeResult
	version    string
	initErr    error
	readyCh    chan struct{} // closed after the first handshake (ok or not)
	subs       map[string]map[Session]bool
	cancel     context.CancelFunc
	ctx        context.Context // the supervisor's: a start ends with it

	asks legacyAsks
}

// NewLegacyShared returns the shared legacy child of the sessions that
// sessions lists; it starts with the first Initialize.
func NewLegacyShared(env *Env, sessions func() []Session) *LegacyShared {
	l := &LegacyShared{env: env, sessions: sessions, readyCh: make(chan struct{}), subs: map[string]map[Session]bool{}}
	l.conn = NewConn(&env.IDs, l, env.Log.With().Str("child", "legacy-shared").Logger())
	return l
}

// The ways Initialize fails; the front answers each with a 503.
var (
	// ErrShuttingDown: Close began while the initialize was on its way in.
	ErrShuttingDown = errors.New("mcp-bridge is shutting down")
	// ErrNotInitialized: the child's first handshake did not finish
	// within the start timeout.
	ErrNotInitialized = errors.New("mcp-bridge: the shared MCP server did not finish initializing")
	// ErrInitFailed: the child's handshake failed; it is tried again
	// after a backoff (launch), so the client may come back then.
	ErrInitFailed = errors.New("mcp-bridge: the shared MCP server failed to initialize")
)

// Initialize answers a session's initialize from the shared child: the
// first one starts the child with its params, every one waits (within ctx
// and the start timeout) for the child's handshake, and gets the cached
// InitializeResult and its protocol version, and the connection the
// session's requests go to.
func (l *LegacyShared) Initialize(ctx context.Context, m *wire.Message) (conn *Conn, result []byte, version string, err error) {
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
		sup := &stdiohost.Supervisor{Start: l.launch, OnExit: l.exited, InitialBackoff: l.env.RestartBackoff, Logger: l.env.Log, Watch: l.env.Crash}
		if !l.env.Life.Go(func() { sup.Run(ctx) }) {
			// Close began while this initialize was on its way in.
			cancel()
			l.mu.Unlock()
			return nil, nil, "", ErrShuttingDown
		}
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, l.env.StartTimeout)
	defer cancel()
	select {
	case <-l.readyCh:
	case <-ctx.Done():
		return nil, nil, "", ErrNotInitialized
	}
	l.mu.Lock()
	result, version, err = l.result, l.version, l.initErr
	l.mu.Unlock()
	if result == nil {
		// It is tried again after a backoff (launch): come back then.
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: %w", ErrInitFailed, err)
		}
		return nil, nil, "", ErrInitFailed
	}
	return l.conn, result, version, nil
}

// launch starts the child and performs the handshake on the bridge's behalf.
func (l *LegacyShared) launch() (*stdiohost.Host, error) {
	l.conn.revive()
	host, err := l.env.StartHost(l.conn)
	if err != nil {
		l.finishInit(nil, "", err)
		return nil, err
	}
	l.mu.Lock()
	params, run := l.initParams, l.ctx
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(run, l.env.StartTimeout)
	defer cancel()
	resp, err := l.conn.Request(ctx, "initialize", params)
	if err == nil && resp.Error.Present() {
		err = errors.New(string(resp.Bytes(resp.Error)))
	}
	switch {
	case err != nil:
		l.finishInit(nil, "", err)
		if run.Err() == nil {
			// Stopped and started again after the supervisor's backoff: a
			// child that missed its handshake would stay unusable.
			l.env.Log.Warn().Err(err).Msg("shared MCP server did not initialize; stopping it and retrying")
			host.Close()
		}
	default:
		version, _ := wire.StringField(resp.Raw, resp.Result, "protocolVersion")
		l.conn.Send(wire.Notification("notifications/initialized", nil))
		l.finishInit(clone(resp.Bytes(resp.Result)), version, nil)
	}
	return host, nil
}

func (l *LegacyShared) finishInit(result []byte, version string, err error) {
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

func (l *LegacyShared) exited(host *stdiohost.Host) {
	l.conn.FailAll("mcp-bridge: the MCP server process exited", host.Err())
}

// Close stops the child.
func (l *LegacyShared) Close() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Unrouted fans a server-wide notification (list_changed, a resource
// update) out to the sessions it concerns: a resource update to the
// sessions subscribed to that resource, anything else to every session. A
// log message belongs to whichever call produced it, so it goes only where
// that is unambiguous (see owner); so does a URL elicitation's completion,
// which "MUST only be sent to the client that initiated the elicitation
// request" (SEP-1036).
func (l *LegacyShared) Unrouted(c *Conn, m *wire.Message) {
	if m.Method == "notifications/message" || m.Method == translate.MethodElicitationComplete {
		if s := l.owner(); s != nil {
			s.Route(m, true)
		} else {
			c.log.Debug().Msg("log message with several sessions in flight: not attributable, dropped")
		}
		return
	}
	targets := l.sessions()
	if owner, bound, ok := c.taskNotificationOwner(m); ok {
		// A task's status (its result, in SEP-2663) is its owner's alone.
		targets = slices.DeleteFunc(targets, func(s Session) bool { return !bound || s.OwnerKey() != owner })
	}
	if m.Method == "notifications/resources/updated" {
		uri, _ := wire.StringField(m.Raw, m.Params, "uri")
		l.mu.Lock()
		subs := l.subs[uri]
		l.mu.Unlock()
		targets = slices.DeleteFunc(targets, func(s Session) bool { return !subs[s] })
	}
	for _, s := range targets {
		s.Route(m, false)
	}
}

// ChildRequest hands a server-to-client request (sampling, elicitation,
// roots) to the session it must belong to. stdio carries no link between
// such a request and the call that caused it, so with several sessions in
// flight the bridge cannot know, and a wrong guess would show one client's
// prompt to another. It refuses instead; --session-mode per-session has no
// such ambiguity.
func (l *LegacyShared) ChildRequest(c *Conn, m *wire.Message) {
	s := l.owner()
	if s == nil {
		c.warn.Warn(c.log, "unattributed_request").Str("method", m.Method).Msg("shared child asked a client while several sessions are in flight; refused (use --session-mode per-session)")
		c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError,
			"mcp-bridge: "+m.Method+" cannot be attributed to one client of a shared child; run the bridge with --session-mode per-session", nil))
		return
	}
	id, ok := l.asks.mint(s, m)
	if !ok {
		c.warn.Warn(c.log, "too_many_asks").Str("method", m.Method).Int("unanswered", maxAsks).Msg("shared child has too many unanswered server-to-client requests; refused")
		c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many unanswered server-to-client requests", nil))
		return
	}
	s.Route(m, true, wire.Edit{Span: m.ID, Value: id})
}

// Answer relays a session's response to one of the child's requests; it
// reports false for a response to no request delivered to that session.
func (l *LegacyShared) Answer(s Session, m *wire.Message) (bool, error) {
	msg, ok := l.asks.answer(s, m)
	if !ok {
		return false, nil
	}
	return true, l.conn.Send(l.conn.InternalAnswer(msg)) // task ids: tasks.go
}

// owner returns the one session with requests in flight, or the only
// session there is; nil when that is ambiguous.
func (l *LegacyShared) owner() Session {
	all := l.sessions()
	if len(all) == 1 {
		return all[0]
	}
	var found Session
	for _, s := range all {
		if s.Busy() {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// Subscribe keeps the child's resource subscriptions reference-counted
// across sessions; it reports whether the request must reach the child.
func (l *LegacyShared) Subscribe(s Session, uri string, on bool) (forward bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.subs[uri]
	if on {
		if set == nil {
			set = map[Session]bool{}
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

// Forget drops an ended session's subscriptions, and answers the child's
// requests still waiting for it.
func (l *LegacyShared) Forget(s Session) {
	for _, id := range l.asks.drop(s) {
		l.conn.Send(wire.ErrorResponse(id, wire.CodeInternalError, "mcp-bridge: the session this request was for has ended", nil))
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
