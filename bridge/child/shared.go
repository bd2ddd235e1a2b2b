package child

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// probeMeta is the _meta envelope of the bridge's own requests to a child.
var probeMeta = string(translate.ProbeParams(translate.Modern, nil, []byte(`{"name":"mcp-bridge","version":"1"}`)))

// bridgeCapabilities are what the bridge declares when it performs the
// handshake with a legacy child on behalf of 2026-07-28 clients: every
// server-to-client request it can carry across in an input round.
// Sub-capabilities included (sampling with tools, URL elicitation): each
// call's own clientCapabilities decide what reaches its client
// (translate.Covers).
const bridgeCapabilities = `{"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}}`

// Shared is the one child that every modern (2026-07-28) client
// shares: the requests are stateless, so one process serves them all once
// ids, progress tokens and subscription ids are kept apart.
//
// When the child speaks only the handshake era, the bridge translates: it
// initializes the child itself, answers server/discover from the result,
// adds resultType to results, serves subscriptions/listen from the child's
// notifications, maps per-request log levels onto logging/setLevel, and
// turns the child's server-to-client requests into input rounds.
type Shared struct {
	env    *Env
	conn   atomic.Pointer[Conn]
	Tools  ToolCache
	eras   eras
	known  chan struct{} // closed once eras is set
	Listen translate.ListenHub
	mrtr   suspensions
	adopt  *prober // a probe sibling that becomes the first child
	// from is the Handler's first child when this one serves another
	// principal: the era probe's verdict is taken from it.
	from *Shared
	who  auth.Principal
	// ctx is the run's: a start in progress ends with it (Close).
	ctx context.Context

	mu        sync.Mutex
	ready     bool
	readyCh   chan struct{} // closed while a handshaken child is available
	versions  []string      // the versions the child's server/discover lists
	modernVs  []string      // the modern ones among them (for -32022)
	discover  []byte        // the DiscoverResult (the child's, or built from initialize)
	lastError string
	// unready counts the children in a row that exited without ever
	// answering (a crash loop); see connection.
	unready int
	// exitCh is closed (and replaced) whenever a child exits, so that
	// requests waiting for a child re-check for a crash loop.
	exitCh chan struct{}

	levelMu sync.Mutex
	level   string // the legacy child's current logging level

	// URLs are a legacy child's completed URL elicitations (serve's
	// urlelicit.go).
	URLs translate.Completions
}

func NewShared(env *Env) *Shared {
	s := &Shared{env: env, known: make(chan struct{}), readyCh: make(chan struct{}), exitCh: make(chan struct{})}
	s.mrtr.init(s)
	return s
}

// Translating reports whether modern clients need translation to reach
// the child. It waits for the era probe, at most the start timeout (and not
// at all through a crash loop); false when it is not known by then.
func (s *Shared) Translating(ctx context.Context) (bool, bool) {
	select {
	case <-s.known:
		return !s.eras.modern, true
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, s.env.StartTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		exit, looping := s.exitCh, s.unready >= crashLoop
		s.mu.Unlock()
		if looping {
			return false, false
		}
		select {
		case <-s.known:
			return !s.eras.modern, true
		case <-exit:
		case <-ctx.Done():
			return false, false
		case <-s.env.Closing:
			return false, false
		}
	}
}

// setPrincipal records whom the child serves (ChildPerPrincipal), for logs.
func (s *Shared) setPrincipal(p auth.Principal) {
	s.mu.Lock()
	s.who = p
	s.mu.Unlock()
}

func (s *Shared) label() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.from == nil && s.who == (auth.Principal{}) {
		return "shared"
	}
	return "shared:" + s.who.String()
}

func (s *Shared) Run(ctx context.Context) {
	s.ctx = ctx
	if s.from != nil {
		select {
		case <-s.from.known:
			s.eras = s.from.eras
		case <-ctx.Done():
		}
	} else if !s.detect(ctx) {
		close(s.known)
		return
	}
	close(s.known)
	if ctx.Err() != nil {
		// Closed while the probe ran: the sibling it would have adopted
		// is still running.
		if s.adopt != nil {
			s.adopt.close()
			s.adopt = nil
		}
		return
	}
	sup := &stdiohost.Supervisor{
		Start:          s.launch,
		OnExit:         s.exited,
		InitialBackoff: s.env.RestartBackoff,
		Logger:         s.env.Log,
		Watch:          s.env.Crash,
	}
	sup.Run(ctx)
	if c := s.conn.Swap(nil); c != nil {
		c.FailAll("mcp-bridge is shutting down", nil)
	}
	s.mrtr.closeAll()
}

func (s *Shared) launch() (*stdiohost.Host, error) {
	var conn *Conn
	var host *stdiohost.Host
	var first *wire.Message // the child's answer to the bridge's first request
	if p := s.adopt; p != nil {
		s.adopt = nil
		conn, host, first = p.conn, p.host, p.resp
	} else {
		conn = NewConn(&s.env.IDs, s, s.env.Log.With().Str("child", s.label()).Logger())
		h, err := s.env.StartHost(conn)
		if err != nil {
			s.setState(false, nil, err.Error())
			return nil, err
		}
		host = h
	}
	// The connection is published only once the child has answered its
	// first request (discover, or the bridge's own handshake): before that
	// a legacy child must not see a client's request, and a translated
	// discover would have nothing to answer with.
	if s.eras.modern {
		s.probe(conn, first)
	} else {
		s.initialize(conn, first)
	}
	if reason := s.NotReady(); reason != "" {
		select {
		case <-host.Exited():
			return host, nil // it died: a crash, the supervisor's to handle
		default:
		}
		if s.ctx.Err() != nil {
			return host, nil // Close: the supervisor stops it
		}
		// No usable answer within the start timeout: the child is
		// stopped, and the supervisor starts another after its backoff
		// (/readyz says why meanwhile). Left running, a child that missed
		// its one handshake would stay unusable for good.
		s.env.Log.Warn().Str("reason", reason).Msg("MCP server did not finish starting; stopping it and retrying")
		host.Close()
		return host, nil
	}
	s.conn.Store(conn)
	{
		s.mu.Lock()
		s.unready = 0
		select {
		case <-s.readyCh:
		default:
			close(s.readyCh)
		}
		s.mu.Unlock()
	}
	return host, nil
}

// Current returns the child's connection, nil while none is ready.
func (s *Shared) Current() *Conn { return s.conn.Load() }

// SpeaksLegacy reports whether the era probe found the handshake era
// (known once Translating has returned true).
func (s *Shared) SpeaksLegacy() bool { return s.eras.legacy }

// Connection returns the shared child's connection, waiting up to the
// probe timeout while it starts or restarts.
func (s *Shared) Connection(ctx context.Context) *Conn {
	if c := s.conn.Load(); c != nil {
		return c
	}
	// At most the start timeout: a child still starting keeps the request
	// (within the client's own deadline, its context) rather than 503 at
	// once, and a request that waited through the era probe waits on.
	ctx, cancel := context.WithTimeout(ctx, s.env.StartTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		ch, exit := s.readyCh, s.exitCh
		looping := s.unready >= crashLoop
		s.mu.Unlock()
		if looping {
			// A child that keeps dying before it answers will not be
			// ready within the wait either: say so now (503 +
			// Retry-After) instead of holding every request for the
			// whole probe timeout — also a request that was already
			// waiting when the loop was recognized.
			return nil
		}
		select {
		case <-exit:
			// A child exited: a crash loop now, or wait for the next.
		case <-ch:
			if c := s.conn.Load(); c != nil {
				return c
			}
			// The child went away again: exited replaced readyCh before
			// it cleared conn, so the next round waits on the new one.
		case <-ctx.Done():
			return nil
		case <-s.env.Closing:
			return nil
		}
	}
}

// probe asks a new child for its server/discover result: the versions it
// supports (for -32022 answers) and that it answers at all (/readyz).
func (s *Shared) probe(conn *Conn, resp *wire.Message) {
	ctx, cancel := context.WithTimeout(s.ctx, s.env.StartTimeout)
	defer cancel()
	if resp == nil {
		var err error
		if resp, err = conn.Request(ctx, "server/discover", []byte(probeMeta)); err != nil {
			s.setState(false, nil, "MCP server did not answer server/discover: "+err.Error())
			return
		}
	}
	var versions []string
	if resp.Result.Present() {
		var r struct {
			Capabilities struct {
				Tools *struct{} `json:"tools"`
			} `json:"capabilities"`
		}
		if json.Unmarshal(resp.Bytes(resp.Result), &r) == nil {
			versions = translate.SupportedVersions(resp)
			s.mu.Lock()
			s.discover = clone(resp.Bytes(resp.Result))
			s.mu.Unlock()
			if r.Capabilities.Tools != nil {
				s.Tools.prefetch(ctx, conn, []byte(probeMeta))
			}
		}
	}
	s.setState(true, versions, "")
	s.env.Log.Info().Strs("versions", versions).Msg("MCP server ready")
}

// initialize performs the handshake with a legacy-only child on behalf of
// every modern client (2025-11-25 lifecycle: initialize, then
// notifications/initialized), and derives the DiscoverResult from it.
func (s *Shared) initialize(conn *Conn, resp *wire.Message) {
	ctx, cancel := context.WithTimeout(s.ctx, s.env.StartTimeout)
	defer cancel()
	var err error
	if resp == nil {
		resp, err = conn.Request(ctx, "initialize", s.env.bridgeInitParams())
	}
	if err != nil || !resp.Result.Present() {
		reason := "MCP server did not answer initialize"
		if err != nil {
			reason += ": " + err.Error()
		} else {
			reason += ": " + string(resp.Bytes(resp.Error))
		}
		s.setState(false, nil, reason)
		return
	}
	conn.Send(wire.Notification("notifications/initialized", nil))
	s.levelMu.Lock()
	s.level = ""
	s.levelMu.Unlock()
	s.mu.Lock()
	s.discover = translate.TasksToModern(translate.DiscoverFromInitialize(resp.Bytes(resp.Result)), resp.Bytes(resp.Result))
	s.mu.Unlock()
	if caps, ok := wire.Field(resp.Raw, resp.Result, "capabilities"); ok {
		if _, ok := wire.Field(resp.Raw, caps, "tools"); ok {
			s.Tools.prefetch(ctx, conn, []byte("{}"))
		}
	}
	s.resubscribe(conn)
	s.setState(true, []string{translate.Modern}, "")
	s.env.Log.Info().Msg("MCP server ready (legacy child, translated for 2026-07-28 clients)")
}

// DiscoverResult returns the DiscoverResult clients get.
func (s *Shared) DiscoverResult() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discover
}

// SetLevel maps a request's _meta logLevel onto the legacy child's
// logging/SetLevel, which is per connection in that era.
func (s *Shared) SetLevel(ctx context.Context, conn *Conn, level string) {
	s.levelMu.Lock()
	defer s.levelMu.Unlock()
	if s.level == level {
		return
	}
	params := append(wire.AppendString([]byte(`{"level":`), level), '}')
	if resp, err := conn.Request(ctx, "logging/setLevel", params); err == nil && resp.Result.Present() {
		s.level = level
	}
}

func (s *Shared) setState(ready bool, versions []string, reason string) {
	s.mu.Lock()
	s.ready, s.lastError = ready, reason
	if versions != nil {
		s.versions = versions
		s.modernVs = nil
		for _, v := range versions {
			if translate.IsModern(v) {
				s.modernVs = append(s.modernVs, v)
			}
		}
	}
	s.mu.Unlock()
}

func (s *Shared) exited(host *stdiohost.Host) {
	reason, msg := "MCP server process exited; restarting", "mcp-bridge: the MCP server process exited"
	if host.Hung() {
		reason = "MCP server stopped reading its stdin (write timed out); killed, restarting"
		msg = "mcp-bridge: the MCP server stopped reading its input and was restarted"
	}
	s.mu.Lock()
	if s.conn.Load() == nil && s.lastError != "" && !strings.HasSuffix(s.lastError, "; restarting") {
		reason = s.lastError + "; restarting" // why it never became ready
	}
	s.mu.Unlock()
	s.setState(false, nil, reason)
	s.env.Tel.Restarted()
	s.mu.Lock()
	select {
	case <-s.readyCh:
		s.readyCh = make(chan struct{})
	default:
	}
	s.mu.Unlock()
	c := s.conn.Swap(nil)
	s.mu.Lock()
	if c == nil {
		s.unready++ // it never answered: published children are ready
	} else {
		s.unready = 0
	}
	close(s.exitCh)
	s.exitCh = make(chan struct{})
	s.mu.Unlock()
	if c != nil {
		c.FailAll(msg, host.Err())
	}
}

// crashLoop is how many children in a row must exit without answering
// before requests stop waiting for the next one.
const crashLoop = 3

// NotReady returns why /readyz should fail, or "".
func (s *Shared) NotReady() string {
	if c := s.conn.Load(); c != nil {
		if h := c.host.Load(); h != nil && h.Hung() {
			return "MCP server stopped reading its stdin (write timed out); killed, restarting"
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return ""
	}
	if s.lastError != "" {
		return s.lastError
	}
	return "MCP server starting"
}

// Supported returns the modern versions the child supports. The slice is
// shared: callers must not modify it.
func (s *Shared) Supported() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.modernVs) == 0 {
		return defaultModern
	}
	return s.modernVs
}

var defaultModern = []string{translate.Modern}

func (s *Shared) Pending() int {
	if c := s.conn.Load(); c != nil {
		return c.Pending()
	}
	return 0
}

// Unrouted: a modern client only ever sees messages tied to its own request
// (2026-07-28 streamable-http §Receiving: notifications "MUST relate to the
// originating client request"). A legacy child's change notifications feed
// the bridge's own listen streams; anything else is dropped.
func (s *Shared) Unrouted(c *Conn, m *wire.Message) {
	if s.URLs.Record(m) { // 2026-07-28 has no such notification: it ends a wait
		return
	}
	if s.erasKnown() && !s.eras.modern && s.Listen.Deliver(m) {
		return
	}
	c.log.Debug().Str("method", m.Method).Msg("child notification with no modern request to carry it; dropped")
}

// ChildRequest: 2026-07-28 forbids server-to-client requests. A legacy
// child's are carried to the client in input rounds; otherwise they are
// answered so that the child does not wait forever.
func (s *Shared) ChildRequest(c *Conn, m *wire.Message) {
	if s.erasKnown() && !s.eras.modern {
		s.mrtr.childRequest(c, m)
		return
	}
	s.env.Warn.Warn(c.log, "modern_child_request").Str("method", m.Method).Msg("child sent a server-to-client request to 2026-07-28 clients; refused")
	c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound,
		"mcp-bridge: 2026-07-28 clients do not take server-to-client requests (ask in an input round)", nil))
}

// erasKnown reports whether the era probe is over (before that, a message
// can only come from a probe sibling).
func (s *Shared) erasKnown() bool {
	select {
	case <-s.known:
		return true
	default:
		return false
	}
}
