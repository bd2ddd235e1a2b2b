package child

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// ErrGone is returned for work addressed to a child that has exited.
var ErrGone = errors.New("serve: MCP server process is not running")

// A Call is one request in flight at a child. Toward the child it carries a
// bridge-minted integer id, which also serves as its progress token and, for
// subscriptions/listen, its subscription id; the client's own values are
// restored on every message that goes back.
type Call struct {
	ChildID  int64
	Method   string
	internal chan []byte    // bridge-internal call: receives the raw response
	Sess     Session        // legacy session that sent it; nil for modern
	Who      auth.Principal // a modern request's principal (tasks.go)
	LogLevel bool           // a modern request that asked for log notifications
	Started  time.Time
	Op       *telemetry.Op // the request's telemetry; nil if off
	// Via is the modern child a translated legacy session's call rides on
	// (Sess's); nil otherwise (tasks.go).
	Via *Shared

	// Complete: the child speaks only the handshake era and the client is
	// modern, so results get the 2026-07-28 resultType (and cache hints).
	Complete bool
	// Caps are a modern client's declared capabilities, for the
	// server-to-client requests a legacy child may make during the call.
	Caps wire.Capabilities
	// round is the call's input rounds (mrtr.go), from the child's first
	// request for input; only the child's reader goroutine sets it.
	round *roundCall

	// DeliverFn, if set, replaces the sink (bridge-owned streams, the
	// in-process entry). m is msg parsed (the child's reader's parse,
	// re-based past Route's edits), or nil for a message the bridge made.
	DeliverFn func(msg []byte, m *wire.Message, final bool)
	// OnFinal, if set, sees the child's response first (on the reader
	// goroutine; it must not block) and may take it over by returning true.
	OnFinal func(m *wire.Message) bool

	// Guarded by mu once the call is started (read through Target); the
	// front sets OrigID and Sink when it makes the call.
	mu        sync.Mutex
	OrigID    []byte       // the client's id, verbatim
	origToken []byte       // the client's progress token, verbatim; nil if none
	Sink      *stream.Sink // where the client reads; nil while suspended (MRTR)
	held      [][]byte     // raw child messages kept while suspended
	heldBytes int          // their size, bounded like a stream's queue
}

// Target returns where cl's messages go now: the client's id and
// progress token, and its stream (nil while suspended).
func (cl *Call) Target() (id, token []byte, sk *stream.Sink) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.OrigID, cl.origToken, cl.Sink
}

// An Owner decides what happens to child messages that no call claims:
// notifications without a progress token or subscription id, log messages,
// and server-to-client requests.
type Owner interface {
	Unrouted(c *Conn, m *wire.Message)
	ChildRequest(c *Conn, m *wire.Message)
}

// A Session is a 2025 session of the front (serve's) as its calls and
// the shared legacy child see it.
type Session interface {
	// Settled: cl's final message went to the session's client.
	Settled(cl *Call)
	// Route places a copy of m's message with edits applied (ids,
	// tokens), a message no call claims, on one of the session's streams;
	// related: it belongs to a request in flight (a server-to-client
	// request, a log line), whose stream it prefers. m is the child's
	// reader's parse: an in-process client gets it along (SpliceParsed).
	Route(m *wire.Message, related bool, edits ...wire.Edit)
	// OwnerKey is the principal that initialized the session (Key).
	OwnerKey() string
	// Busy reports whether the session has requests in flight.
	Busy() bool
}

// A Conn routes messages between HTTP requests and one child process.
type Conn struct {
	host  atomic.Pointer[stdiohost.Host]
	ids   *atomic.Int64
	owner Owner
	log   zerolog.Logger
	lim   *stream.Limits // counts the calls in flight; nil outside a Handler
	warn  *ratelog.Kinds // rate-limits warnings about the child's output
	// filter hides tools (Config.ToolFilter, filter.go); nil hides none.
	filter func(name string) bool
	// tasks binds the child's tasks to their creators (tasks.go).
	tasks tasks.Table[progressRoute]
	// replica names this replica in task ids (Config.ReplicaID); set with
	// lim (Env.HostOptions).
	replica string
	bound   bool // lim, warn and filter are set (Env.HostOptions)

	mu      sync.Mutex
	calls   map[int64]*Call
	logging int // in-flight modern calls with a log level
	gone    bool
}

func NewConn(ids *atomic.Int64, o Owner, log zerolog.Logger) *Conn {
	return &Conn{ids: ids, owner: o, log: log, calls: make(map[int64]*Call)}
}

// Start registers cl and sends the request m to the child with cl's id and
// progress token substituted.
func (c *Conn) Start(cl *Call, m *wire.Message) error {
	if cl.ChildID == 0 {
		cl.ChildID = c.ids.Add(1)
	}
	cl.Started = time.Now()
	m, refusal := c.checkTasks(cl, m) // before the edits: it may rewrite m
	// The trace context the request's Op holds (observe) goes into the
	// same copy as the child's id; first, since when it cannot be spliced
	// it edits m itself, and the id's span is then m's new one.
	var room [telemetry.RelayRoom]byte
	var edits [4]wire.Edit // fixed, no append or copy: room would go to the heap
	tr, n := cl.Op.RelayEdits(m, room[:0])
	edits[0], edits[1] = tr[0], tr[1]
	idb := wire.AppendInt(nil, cl.ChildID)
	edits[n] = wire.Edit{Span: m.ID, Value: idb}
	n++
	if m.ProgressToken.Present() {
		cl.origToken = clone(m.Bytes(m.ProgressToken))
		edits[n] = wire.Edit{Span: m.ProgressToken, Value: idb}
		n++
	}
	if cl.OrigID == nil && cl.internal == nil && cl.DeliverFn == nil {
		cl.OrigID = clone(m.IDBytes())
	}
	if c.hidden(m) {
		return c.refuseHidden(cl, m)
	}
	if refusal != "" {
		return c.refuseTask(cl, m.Method, refusal)
	}
	msg := wire.Splice(m.Raw, edits[:n]...)
	if err := c.register(cl); err != nil {
		return err
	}
	if err := c.Send(msg); err != nil {
		c.Take(cl.ChildID)
		return err
	}
	return nil
}

// attach binds the started process; messages may arrive before it is
// attached, so every use of the host goes through send.
// register makes cl a call in flight at this child: its answer is routed
// by cl.ChildID from now on, and it counts against the in-flight budget.
func (c *Conn) register(cl *Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return ErrGone
	}
	c.calls[cl.ChildID] = cl
	c.lim.Started()
	if cl.LogLevel {
		c.logging++
	}
	return nil
}

func (c *Conn) attach(h *stdiohost.Host) {
	c.tasks.Reset(c.replica) // a new process: the old one's tasks are gone, its ids get a new epoch
	c.host.Store(h)
}

// revive readies a connection object for a restarted child.
func (c *Conn) revive() {
	c.mu.Lock()
	c.gone = false
	c.mu.Unlock()
}

// done is closed when the child is gone for good.
func (c *Conn) done() <-chan struct{} {
	if h := c.host.Load(); h != nil {
		return h.Done()
	}
	return nil
}

// Request runs a bridge-internal Request and returns the raw response.
func (c *Conn) Request(ctx context.Context, method string, params []byte) (*wire.Message, error) {
	cl := &Call{internal: make(chan []byte, 1), Method: method}
	var m wire.Message
	if err := wire.Parse(wire.Request([]byte("0"), method, params), &m); err != nil {
		return nil, err
	}
	if err := c.Start(cl, &m); err != nil {
		return nil, err
	}
	var raw []byte
	select {
	case raw = <-cl.internal:
	case <-c.done():
		select {
		case raw = <-cl.internal: // answered just before the exit
		default:
			c.Take(cl.ChildID) // no longer in flight (--max-inflight)
			return nil, ErrGone
		}
	case <-ctx.Done():
		c.Cancel(cl, "timeout")
		return nil, ctx.Err()
	}
	var resp wire.Message
	if err := wire.Parse(raw, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Send writes a message the bridge does not track (a notification, a
// client's response to a server request).
func (c *Conn) Send(msg []byte) error {
	h := c.host.Load()
	if h == nil {
		return ErrGone
	}
	if err := h.Send(msg); err != nil {
		if errors.Is(err, lineio.ErrEmbeddedNewline) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrGone, err)
	}
	return nil
}

func (c *Conn) Take(id int64) *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.calls[id]
	if cl != nil {
		delete(c.calls, id)
		c.lim.Ended(1)
		if cl.LogLevel {
			c.logging--
		}
	}
	return cl
}

func (c *Conn) get(id int64) *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// Cancel abandons cl: the child is told with notifications/cancelled, and
// anything it still sends for the call is dropped. 2026-07-28
// streamable-http §Cancellation: closing the response stream "MUST be
// treated by the server as cancellation of that request"; on stdio that is a
// notifications/cancelled naming the request (stdio §Cancellation).
func (c *Conn) Cancel(cl *Call, reason string) {
	if c.Take(cl.ChildID) == nil {
		return // already answered
	}
	params := wire.AppendInt(append([]byte(nil), `{"requestId":`...), cl.ChildID)
	params = wire.AppendString(append(params, `,"reason":`...), reason)
	params = append(params, '}')
	if err := c.Send(wire.Notification("notifications/cancelled", params)); err != nil {
		c.log.Debug().Err(err).Int64("child_id", cl.ChildID).Msg("could not send cancellation")
		return
	}
	c.log.Debug().Int64("child_id", cl.ChildID).Str("reason", reason).Msg("sent notifications/cancelled to child")
}

// onMessage is the host's OnMessage: it runs on the child's stdout reader
// goroutine and must not block.
func (c *Conn) onMessage(raw []byte) {
	var m wire.Message
	// Checked whole, not only the envelope Parse walks: a client's decoder
	// must never meet a line of the child that the bridge took for JSON.
	err := wire.ErrSyntax
	if wire.Valid(raw) {
		err = wire.Parse(raw, &m)
	}
	if err != nil {
		c.warn.Warn(c.log, "bad_line").Err(err).Int("bytes", len(raw)).Msg("child wrote a line that is not a JSON-RPC message; dropped")
		return
	}
	c.tasks.Expose(&m) // task ids as the client knows them (tasks.go)
	switch m.Kind {
	case wire.KindResponse:
		c.onResponse(&m)
	case wire.KindNotification:
		c.onNotification(&m)
	case wire.KindRequest:
		c.owner.ChildRequest(c, &m)
	}
}

func (c *Conn) onResponse(m *wire.Message) {
	id, ok := wire.ParseIntID(m.IDBytes())
	var cl *Call
	if ok {
		cl = c.Take(id)
	}
	if cl == nil {
		c.log.Debug().RawJSON("id", m.IDBytes()).Msg("response for no pending request (cancelled or late); dropped")
		return
	}
	if cl.internal != nil {
		cl.internal <- clone(m.Raw)
		return
	}
	switch cl.Method {
	case "tools/list":
		m = c.filterTools(m)
	case "tools/call":
		c.bindTask(cl, m)
	case "tasks/list":
		m = c.tasks.FilterList(cl.principalKey(), m)
	}
	m = c.taskAcrossEras(cl, m)
	if cl.OnFinal != nil && cl.OnFinal(m) {
		return
	}
	cl.Op.Result(m)
	c.Route(cl, m, true)
}

// Route delivers one child message that belongs to cl, in the client's
// terms: its own request id, progress token and subscription id.
func (c *Conn) Route(cl *Call, m *wire.Message, final bool) {
	cl.mu.Lock()
	if cl.Sink == nil && cl.DeliverFn == nil {
		// Suspended: the client has an InputRequiredResult and has not
		// retried yet. Keep the message for the retry's stream, within a
		// stream's bound; only the final response is always kept.
		if m.Kind != wire.KindResponse && cl.heldBytes+len(m.Raw) > c.perStream() {
			cl.mu.Unlock()
			c.warn.Warn(c.log, "held_full").Int64("child_id", cl.ChildID).Msg("suspended call holds too much; child message dropped")
			return
		}
		cl.held = append(cl.held, clone(m.Raw))
		cl.heldBytes += len(m.Raw)
		cl.mu.Unlock()
		return
	}
	id, token, sk := cl.OrigID, cl.origToken, cl.Sink
	cl.mu.Unlock()
	var out []byte
	var pm *wire.Message // out parsed, for a DeliverFn: no one parses it again
	if cl.DeliverFn != nil {
		pm = new(wire.Message)
	}
	switch {
	case m.Kind == wire.KindResponse:
		edits := []wire.Edit{{Span: m.ID, Value: id}}
		// A listen stream's closing result names its subscription
		// (subscriptions §Graceful closure): restore the client's id there.
		if cl.Method == "subscriptions/listen" && m.Result.Present() {
			if meta, ok := wire.Field(m.Raw, m.Result, "_meta"); ok {
				if sub, ok := wire.Field(m.Raw, meta, wire.MetaSubscriptionID); ok {
					edits = append(edits, wire.Edit{Span: sub, Value: id})
				}
			}
		}
		if cl.Complete {
			if e, ok := wire.CompleteResultEdit(m, cl.Method); ok {
				edits = append(edits, e)
			}
		}
		out = wire.SpliceParsed(stream.GetBuf(len(m.Raw)), m, pm, edits...)
	case m.Method == "notifications/progress":
		if token == nil {
			return
		}
		out = wire.SpliceParsed(nil, m, pm, wire.Edit{Span: m.ProgressToken, Value: token})
	case m.SubscriptionID.Present():
		out = wire.SpliceParsed(nil, m, pm, wire.Edit{Span: m.SubscriptionID, Value: id})
	default:
		out = wire.SpliceParsed(nil, m, pm)
	}
	c.deliver(cl, sk, out, pm, final)
}

// deliver hands msg to cl's client; pm is msg parsed, or nil (DeliverFn).
func (c *Conn) deliver(cl *Call, sk *stream.Sink, msg []byte, pm *wire.Message, final bool) {
	if final && cl.Sess != nil {
		cl.Sess.Settled(cl)
	}
	if cl.DeliverFn != nil {
		cl.DeliverFn(msg, pm, final)
		return
	}
	if !sk.Push(msg, final) {
		c.log.Debug().Int64("child_id", cl.ChildID).Msg("client stream gone; message dropped")
	}
}

// suspend detaches cl from its client stream after an InputRequiredResult
// went out on it; messages for cl are held until resume.
func (c *Conn) suspend(cl *Call) {
	cl.mu.Lock()
	cl.Sink = nil
	cl.mu.Unlock()
}

// resume attaches a suspended call to the retry's stream, under the retry's
// id and progress token, and replays what the child sent meanwhile. A
// retry without a token gets no progress: the first round's is forgotten
// ("Progress notifications MUST only reference tokens that were provided
// in an active request", basic/patterns/progress).
func (c *Conn) resume(cl *Call, id, token []byte, sk *stream.Sink) {
	cl.mu.Lock()
	cl.OrigID, cl.Sink, cl.origToken = id, sk, token
	held := cl.held
	cl.held, cl.heldBytes = nil, 0
	cl.mu.Unlock()
	for _, raw := range held {
		var m wire.Message
		if wire.Parse(raw, &m) == nil {
			c.Route(cl, &m, m.Kind == wire.KindResponse)
		}
	}
}

func (c *Conn) onNotification(m *wire.Message) {
	switch {
	case m.Method == "notifications/progress" && m.ProgressToken.Present():
		// The token toward the child is the call's own id (see call).
		if id, ok := wire.ParseIntID(m.Bytes(m.ProgressToken)); ok {
			if cl := c.get(id); cl != nil {
				c.Route(cl, m, false)
				return
			}
			if c.taskProgress(id, m) {
				return
			}
		}
		c.log.Debug().Bytes("token", m.Bytes(m.ProgressToken)).Msg("progress for no pending request; dropped")
		return
	case m.SubscriptionID.Present():
		// 2026-07-28 subscriptions: every notification on a listen stream
		// carries the listen request's id as its subscription id.
		if id, ok := wire.ParseIntID(m.Bytes(m.SubscriptionID)); ok {
			if cl := c.get(id); cl != nil {
				c.Route(cl, m, false)
				return
			}
		}
		c.log.Debug().Str("method", m.Method).Msg("notification for no open subscription; dropped")
		return
	case m.Method == "notifications/cancelled" && m.RequestID.Present():
		// A child may end a listen stream this way (2026-07-28
		// cancellation §Server-initiated); the stream just ends.
		if id, ok := wire.ParseIntID(m.Bytes(m.RequestID)); ok {
			if cl := c.Take(id); cl != nil {
				if _, _, sk := cl.Target(); sk != nil {
					sk.End()
				}
				if cl.Sess != nil {
					cl.Sess.Settled(cl)
				}
				return
			}
		}
	}
	if m.Method == "notifications/message" {
		if cl := c.soleLogger(); cl != nil {
			c.Route(cl, m, false)
			return
		}
	}
	c.owner.Unrouted(c, m)
}

// soleCall returns the only call in flight that matches, or nil.
func (c *Conn) soleCall(match func(*Call) bool) *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found *Call
	for _, cl := range c.calls {
		if match(cl) {
			if found != nil {
				return nil
			}
			found = cl
		}
	}
	return found
}

// soleLogger returns the only in-flight modern call that asked for log
// notifications. stdio log notifications carry no request id, so with two
// or more such calls none can be attributed (2026-07-28 logging: messages
// MUST NOT go to any other stream than the one of the request that set the
// level).
func (c *Conn) soleLogger() *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logging != 1 {
		return nil
	}
	for _, cl := range c.calls {
		if cl.LogLevel {
			return cl
		}
	}
	return nil
}

// FailAll answers every pending call with an error: the child is gone, and
// every request gets exactly one response.
func (c *Conn) FailAll(reason string, exitErr error) {
	c.mu.Lock()
	c.gone = true
	calls := c.calls
	c.calls = make(map[int64]*Call)
	c.lim.Ended(len(calls))
	c.logging = 0
	c.mu.Unlock()
	var data []byte
	if exitErr != nil {
		data = wire.AppendString(append([]byte(nil), `{"exit":`...), exitErr.Error())
		data = append(data, '}')
	}
	for _, cl := range calls {
		id, _, sk := cl.Target()
		msg := wire.ErrorResponse(id, wire.CodeInternalError, reason, data)
		if cl.internal != nil {
			cl.internal <- msg
			continue
		}
		if sk == nil && cl.DeliverFn == nil {
			continue // suspended: the retry will find the call gone
		}
		c.deliver(cl, sk, msg, nil, true)
	}
}

// perStream is what one client stream may hold, which also bounds what the
// bridge keeps for one call or session while no stream is open.
func (c *Conn) perStream() int { return c.lim.PerStream() }

// Pending returns the number of calls in flight.
func (c *Conn) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// Gone stands in for a child while it is down: every send fails with
// ErrGone.
var Gone = func() *Conn {
	c := NewConn(new(atomic.Int64), nil, zerolog.Nop())
	c.gone = true
	return c
}()

func clone(b []byte) []byte { return append([]byte(nil), b...) }
