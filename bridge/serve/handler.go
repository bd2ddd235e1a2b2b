package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// ErrNoCommand is returned by New when Config.Command and Config.Run are
// both nil.
var ErrNoCommand = errors.New("serve: Config.Command (or Config.Run) is required")

// A Handler serves one MCP stdio server at a Streamable HTTP endpoint. It
// implements http.Handler for the MCP path, /healthz and /readyz.
//
// Call Start before serving, BeginShutdown when the listener stops
// accepting, and Close to stop every child and join every goroutine.
type Handler struct {
	cfg   Config
	log   zerolog.Logger
	guard *guard
	warn  *ratelog.Kinds // rate limit of repeated warnings
	lim   *stream.Limits // budgets shared by every stream and child
	// replays bounds every legacy session's replay log together.
	replays *stream.ReplayBudget
	clients clientsSeen // 2026-07-28 clients already logged (clientlog.go)

	tel       *telemetry.Scope       // nil: no metrics, no spans
	obs       telemetry.HTTPObserver // metrics, spans and access log of each request (observe.go)
	stopWatch func()
	// env is what the children take from the Handler (bridge/child):
	// settings, budgets, the ids and the children gauge.
	env *child.Env

	shared     *child.Shared
	principals *child.Principals // ChildPerPrincipal: the other children
	sessions   *sessionTable
	warm       *child.WarmPool // --warm-children; nil: none

	// The shutdown stages, in order (drain.go, Close).
	draining lifecycle.Signal // BeginDrain: /readyz answers 503
	refusing lifecycle.Signal // Refuse and BeginShutdown: new work gets 503
	closing  lifecycle.Signal // BeginShutdown: long-lived streams end
	killed   lifecycle.Signal // Close: in-flight work is abandoned
	cancel   context.CancelFunc
	// life owns the children's supervisors, the reaper, the keepalive
	// clock and what requests start that outlives them (a session's
	// child watcher, its Host.Close). Close closes it only after ending
	// the sessions (which start Host.Closes on it); from then on Go
	// refuses and the caller does the work itself: a request that passed
	// the shutdown check just before Close must not add to a wait in
	// progress (a WaitGroup panics on that: "WaitGroup is reused before
	// previous Wait has returned").
	life    lifecycle.Group
	streams *stream.Engine // the keepalive clock, streams served off net/http
	sse     sseConns       // the HTTP+SSE transport's streams (sse.go)
}

// New returns a Handler. It starts nothing.
func New(cfg Config) (*Handler, error) {
	if cfg.Command == nil && cfg.Run == nil {
		return nil, ErrNoCommand
	}
	if err := checkChildArgs(&cfg); err != nil {
		return nil, err
	}
	h := &Handler{
		cfg:   cfg,
		log:   cfg.Logger,
		guard: newGuard(&cfg),
		warn:  &ratelog.Kinds{},
	}
	if cfg.ReplicaID != "" && !ValidReplicaID(cfg.ReplicaID) {
		return nil, ErrReplicaID
	}
	h.lim = newLimits(&cfg, h)
	h.replays = stream.NewReplayBudget(cfg.maxBuffered())
	h.tel = cfg.Telemetry.ScopeFor(telemetry.Server, cfg.ServerName)
	// At --log-level warn the access log's line would be dropped: the
	// request is then not watched for it at all.
	h.obs = telemetry.HTTPObserver{Scope: h.tel, Log: h.log,
		AccessLog: cfg.AccessLog && cfg.Logger.GetLevel() <= zerolog.InfoLevel && zerolog.GlobalLevel() <= zerolog.InfoLevel}
	if h.obs.AccessLog || (h.tel != nil && h.guard.Required()) {
		h.obs.Principal = auth.PrincipalSlot
	}
	h.streams = stream.NewEngine(cfg.keepalive())
	h.env = h.childEnv()
	h.shared = child.NewShared(h.env)
	h.principals = child.NewPrincipals(h.env, h.shared)
	h.sessions = newSessionTable(h)
	if cfg.sessionMode() == SessionAuto {
		h.warm = child.NewWarmPool(h.env, h.shared)
	}
	if err := h.sse.init(&h.cfg); err != nil {
		return nil, err
	}
	return h, nil
}

// Start launches the shared child under a supervisor and the idle-session
// reaper. They run until Close.
func (h *Handler) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.stopWatch = h.tel.Watch(h.gauges)
	h.principals.Start(ctx)
	h.life.Go(func() { h.shared.Run(ctx) })
	h.life.Go(func() { h.sessions.reap(ctx) })
	if h.warm != nil {
		h.life.Go(func() { h.warm.Run(ctx) })
	}
	if h.cfg.keepalive() > 0 {
		h.life.Go(func() { h.streams.Run(ctx) })
	}
}

// BeginShutdown stops accepting MCP requests (503) and ends long-lived
// streams (legacy GET streams, subscriptions); requests already in flight
// go on until they finish or Close is called.
func (h *Handler) BeginShutdown() {
	h.Refuse()
	h.closing.Fire()
}

// InFlight returns the number of requests the children have not answered.
func (h *Handler) InFlight() int {
	n := h.shared.Pending() + h.sessions.pending()
	for _, sc := range h.principals.Others() {
		n += sc.Pending()
	}
	return n
}

// Close abandons in-flight requests (each gets an error response), stops
// every child with the stdio shutdown sequence and waits for all of the
// Handler's goroutines.
func (h *Handler) Close() error {
	h.BeginShutdown()
	h.killed.Fire()
	if h.cancel != nil {
		h.cancel()
	}
	h.sessions.closeAll()
	h.principals.Stop()
	h.life.Wait()
	// The children are gone and every call is answered or abandoned; what
	// a detached stream has not written by now is lost, as it is for a
	// stream whose connection the http.Server closes.
	h.streams.Close()
	if h.stopWatch != nil {
		h.stopWatch()
	}
	return nil
}

// WaitDetached waits until every stream detached from net/http has ended
// (or ctx ends): stream.Engine.Wait, which a graceful stop calls after
// http.Server.Shutdown, with the same deadline, before Close.
func (h *Handler) WaitDetached(ctx context.Context) error { return h.streams.Wait(ctx) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Health probes are neither logged nor counted: they are the load
	// balancer's, many and uninteresting.
	if h.obs.On() && (r.URL.Path == h.cfg.path() || h.isSSEPath(r.URL.Path)) {
		h.obs.Serve(w, r, h.serveHTTP)
		return
	}
	h.serveHTTP(w, r)
}

func (h *Handler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.ReplicaID != "" {
		w.Header().Set(HeaderReplica, h.cfg.ReplicaID)
	}
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	case "/readyz":
		h.serveReady(w)
		return
	case h.cfg.path():
	default:
		if h.isSSEPath(r.URL.Path) {
			break // the HTTP+SSE transport's (sse.go), behind the same checks
		}
		if h.isMetadataPath(r.URL.Path) {
			h.cfg.Auth.ServeMetadata(w, r)
			return
		}
		h.notFound(w, r)
		return
	}
	if h.guard.CORS(w, r) {
		return
	}
	r, ok := h.guard.check(w, r)
	if !ok {
		return
	}
	if h.refused(w, r) {
		return
	}
	if r.URL.Path != h.cfg.path() {
		h.serveSSE(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r)
	case http.MethodGet:
		h.sessions.serveGet(w, r)
	case http.MethodDelete:
		h.sessions.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "POST, GET, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, wire.CodeInvalidRequest, "Method not allowed", nil)
	}
}

func (h *Handler) serveReady(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.draining.Fired() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "draining\n")
		return
	}
	if reason := h.shared.NotReady(); reason != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, reason+"\n")
		return
	}
	io.WriteString(w, "ready\n")
}

func (h *Handler) servePost(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(wire.MediaType(first(r.Header["Content-Type"])), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, nil, wire.CodeInvalidRequest, "Unsupported Media Type: Content-Type must be application/json", nil)
		return
	}
	if !acceptsBoth(r.Header["Accept"]) {
		writeError(w, http.StatusNotAcceptable, nil, wire.CodeInvalidRequest, "Not Acceptable: Accept must list application/json and text/event-stream", nil)
		return
	}
	body, err := readBody(w, r, h.cfg.maxBody(), h.cfg.readTimeout())
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, nil, wire.CodeInvalidRequest, "Request body exceeds the limit", nil)
		case errors.Is(err, errBodyStalled):
			h.warn.Warn(h.log, "body_stalled").Dur("read_timeout", h.cfg.readTimeout()).Msg("request body stalled; request dropped")
			writeError(w, http.StatusRequestTimeout, nil, wire.CodeInvalidRequest, "Request body stalled", nil)
		default:
			h.log.Debug().Err(err).Msg("reading request body")
		}
		return
	}
	if !wire.Valid(body) {
		writeError(w, http.StatusBadRequest, nil, wire.CodeParseError, "Parse error: the body is not valid JSON", nil)
		return
	}
	if bytes.ContainsAny(body, "\r\n") {
		// stdio carries one message per line (stdio §Message format:
		// messages "MUST NOT contain embedded newlines"), and HTTP bodies
		// may be pretty-printed: drop the whitespace between tokens.
		// Newlines inside strings are escapes and stay as they are.
		var buf bytes.Buffer
		json.Compact(&buf, body)
		body = buf.Bytes()
	}
	// Only spaces and tabs can lead: the body has no newlines any more.
	if b := bytes.TrimLeft(body, " \t"); len(b) > 0 && b[0] == '[' {
		if !h.admit(w, nil) {
			return
		}
		h.sessions.serveBatch(w, r, b)
		return
	}
	var m wire.Message
	if err := wire.Parse(body, &m); err != nil {
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, wire.Refusal(err), nil)
		return
	}
	if m.Kind == wire.KindRequest && !validID(m.IDBytes()) {
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: id must be a string or an integer", nil)
		return
	}
	m = *h.obs.Message(obsOf(w), r, &m)
	// Notifications and responses pass: they free work (cancellations,
	// answers a child waits for) rather than add it.
	if m.Kind == wire.KindRequest && !h.admit(w, m.IDBytes()) {
		return
	}
	// Body-primary classification (2026-07-28 versioning §Dual-era servers):
	// a message whose _meta names a protocol version is modern; everything
	// else belongs to a legacy session.
	if m.IsModern() {
		if sseOf(r) != nil {
			writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request: the HTTP+SSE transport carries handshake-era sessions; send 2026-07-28 requests to "+h.cfg.path(), nil)
			return
		}
		h.serveModern(w, r, &m)
		return
	}
	// The 2025 paths keep and rebuild requests (session translation, input
	// rounds): the trace context goes into the message itself now rather
	// than at the child's connection (observe).
	h.sessions.servePost(w, r, opOf(w).Relayed(&m))
}

// validID accepts the id forms MCP allows: strings and integers.
func validID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	for i, c := range id {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}
