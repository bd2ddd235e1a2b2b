package serve

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

// errChildGone is returned for work addressed to a child that has exited.
var errChildGone = errors.New("serve: MCP server process is not running")

// A call is one request in flight at a child. Toward the child it carries a
// bridge-minted integer id, which also serves as its progress token and, for
// subscriptions/listen, its subscription id; the client's own values are
// restored on every message that goes back.
type call struct {
	childID  int64
	method   string
	internal chan []byte    // bridge-internal call: receives the raw response
	sess     *session       // legacy session that sent it; nil for modern
	who      auth.Principal // a modern request's principal (tasks.go)
	logLevel bool           // a modern request that asked for log notifications
	started  time.Time
	op       *telemetry.Op // the request's telemetry; nil if off

	// complete: the child speaks only the handshake era and the client is
	// modern, so results get the 2026-07-28 resultType (and cache hints).
	complete bool
	// caps are a modern client's declared capabilities, for the
	// server-to-client requests a legacy child may make during the call.
	caps wire.Capabilities
	// round is the call's input rounds (mrtr.go), from the child's first
	// request for input; only the child's reader goroutine sets it.
	round *roundCall

	// deliverFn, if set, replaces the sink (bridge-owned streams, the
	// in-process entry). m is msg parsed (the child's reader's parse,
	// re-based past route's edits), or nil for a message the bridge made.
	deliverFn func(msg []byte, m *wire.Message, final bool)
	// onFinal, if set, sees the child's response first (on the reader
	// goroutine; it must not block) and may take it over by returning true.
	onFinal func(m *wire.Message) bool

	mu        sync.Mutex
	origID    []byte       // the client's id, verbatim
	origToken []byte       // the client's progress token, verbatim; nil if none
	sink      *stream.Sink // where the client reads; nil while suspended (MRTR)
	held      [][]byte     // raw child messages kept while suspended
	heldBytes int          // their size, bounded like a stream's queue
}

func (cl *call) target() (id, token []byte, sk *stream.Sink) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.origID, cl.origToken, cl.sink
}

// An owner decides what happens to child messages that no call claims:
// notifications without a progress token or subscription id, log messages,
// and server-to-client requests.
type owner interface {
	unrouted(c *childConn, m *wire.Message)
	childRequest(c *childConn, m *wire.Message)
}

// A childConn routes messages between HTTP requests and one child process.
type childConn struct {
	host  atomic.Pointer[stdiohost.Host]
	ids   *atomic.Int64
	owner owner
	log   zerolog.Logger
	lim   *stream.Limits // counts the calls in flight; nil outside a Handler
	warn  *ratelog.Kinds // rate-limits warnings about the child's output
	// filter hides tools (Config.ToolFilter, filter.go); nil hides none.
	filter func(name string) bool
	// tasks binds the child's tasks to their creators (tasks.go).
	tasks tasks.Table[progressRoute]
	// replica names this replica in task ids (Config.ReplicaID); set with
	// lim (hostOptions).
	replica string
	bound   bool // lim, warn and filter are set (hostOptions)

	mu      sync.Mutex
	calls   map[int64]*call
	logging int // in-flight modern calls with a log level
	gone    bool
}

func newChildConn(ids *atomic.Int64, o owner, log zerolog.Logger) *childConn {
	return &childConn{ids: ids, owner: o, log: log, calls: make(map[int64]*call)}
}

// start registers cl and sends the request m to the child with cl's id and
// progress token substituted.
func (c *childConn) start(cl *call, m *wire.Message) error {
	if cl.childID == 0 {
		cl.childID = c.ids.Add(1)
	}
	cl.started = time.Now()
	m, refusal := c.checkTasks(cl, m) // before the edits: it may rewrite m
	// The trace context the request's Op holds (observe) goes into the
	// same copy as the child's id; first, since when it cannot be spliced
	// it edits m itself, and the id's span is then m's new one.
	var room [telemetry.RelayRoom]byte
	var edits [4]wire.Edit // fixed, no append or copy: room would go to the heap
	tr, n := cl.op.RelayEdits(m, room[:0])
	edits[0], edits[1] = tr[0], tr[1]
	idb := wire.AppendInt(nil, cl.childID)
	edits[n] = wire.Edit{Span: m.ID, Value: idb}
	n++
	if m.ProgressToken.Present() {
		cl.origToken = clone(m.Bytes(m.ProgressToken))
		edits[n] = wire.Edit{Span: m.ProgressToken, Value: idb}
		n++
	}
	if cl.origID == nil && cl.internal == nil && cl.deliverFn == nil {
		cl.origID = clone(m.IDBytes())
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
	if err := c.send(msg); err != nil {
		c.take(cl.childID)
		return err
	}
	return nil
}

// attach binds the started process; messages may arrive before it is
// attached, so every use of the host goes through send.
// register makes cl a call in flight at this child: its answer is routed
// by cl.childID from now on, and it counts against the in-flight budget.
func (c *childConn) register(cl *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return errChildGone
	}
	c.calls[cl.childID] = cl
	c.lim.Started()
	if cl.logLevel {
		c.logging++
	}
	return nil
}

func (c *childConn) attach(h *stdiohost.Host) {
	c.tasks.Reset(c.replica) // a new process: the old one's tasks are gone, its ids get a new epoch
	c.host.Store(h)
}

// revive readies a connection object for a restarted child.
func (c *childConn) revive() {
	c.mu.Lock()
	c.gone = false
	c.mu.Unlock()
}

// done is closed when the child is gone for good.
func (c *childConn) done() <-chan struct{} {
	if h := c.host.Load(); h != nil {
		return h.Done()
	}
	return nil
}

// request runs a bridge-internal request and returns the raw response.
func (c *childConn) request(ctx context.Context, method string, params []byte) (*wire.Message, error) {
	cl := &call{internal: make(chan []byte, 1), method: method}
	var m wire.Message
	if err := wire.Parse(wire.Request([]byte("0"), method, params), &m); err != nil {
		return nil, err
	}
	if err := c.start(cl, &m); err != nil {
		return nil, err
	}
	var raw []byte
	select {
	case raw = <-cl.internal:
	case <-c.done():
		select {
		case raw = <-cl.internal: // answered just before the exit
		default:
			c.take(cl.childID) // no longer in flight (--max-inflight)
			return nil, errChildGone
		}
	case <-ctx.Done():
		c.cancel(cl, "timeout")
		return nil, ctx.Err()
	}
	var resp wire.Message
	if err := wire.Parse(raw, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// send writes a message the bridge does not track (a notification, a
// client's response to a server request).
func (c *childConn) send(msg []byte) error {
	h := c.host.Load()
	if h == nil {
		return errChildGone
	}
	if err := h.Send(msg); err != nil {
		if errors.Is(err, lineio.ErrEmbeddedNewline) {
			return err
		}
		return fmt.Errorf("%w: %v", errChildGone, err)
	}
	return nil
}

func (c *childConn) take(id int64) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.calls[id]
	if cl != nil {
		delete(c.calls, id)
		c.lim.Ended(1)
		if cl.logLevel {
			c.logging--
		}
	}
	return cl
}

func (c *childConn) get(id int64) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// cancel abandons cl: the child is told with notifications/cancelled, and
// anything it still sends for the call is dropped. 2026-07-28
// streamable-http §Cancellation: closing the response stream "MUST be
// treated by the server as cancellation of that request"; on stdio that is a
// notifications/cancelled naming the request (stdio §Cancellation).
func (c *childConn) cancel(cl *call, reason string) {
	if c.take(cl.childID) == nil {
		return // already answered
	}
	params := wire.AppendInt(append([]byte(nil), `{"requestId":`...), cl.childID)
	params = wire.AppendString(append(params, `,"reason":`...), reason)
	params = append(params, '}')
	if err := c.send(wire.Notification("notifications/cancelled", params)); err != nil {
		c.log.Debug().Err(err).Int64("child_id", cl.childID).Msg("could not send cancellation")
		return
	}
	c.log.Debug().Int64("child_id", cl.childID).Str("reason", reason).Msg("sent notifications/cancelled to child")
}

// onMessage is the host's OnMessage: it runs on the child's stdout reader
// goroutine and must not block.
func (c *childConn) onMessage(raw []byte) {
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
		c.owner.childRequest(c, &m)
	}
}

func (c *childConn) onResponse(m *wire.Message) {
	id, ok := wire.ParseIntID(m.IDBytes())
	var cl *call
	if ok {
		cl = c.take(id)
	}
	if cl == nil {
		c.log.Debug().RawJSON("id", m.IDBytes()).Msg("response for no pending request (cancelled or late); dropped")
		return
	}
	if cl.internal != nil {
		cl.internal <- clone(m.Raw)
		return
	}
	switch cl.method {
	case "tools/list":
		m = c.filterTools(m)
	case "tools/call":
		c.bindTask(cl, m)
	case "tasks/list":
		m = c.tasks.FilterList(cl.principalKey(), m)
	}
	m = c.taskAcrossEras(cl, m)
	if cl.onFinal != nil && cl.onFinal(m) {
		return
	}
	cl.op.Result(m)
	c.route(cl, m, true)
}

// route delivers one child message that belongs to cl, in the client's
// terms: its own request id, progress token and subscription id.
func (c *childConn) route(cl *call, m *wire.Message, final bool) {
	cl.mu.Lock()
	if cl.sink == nil && cl.deliverFn == nil {
		// Suspended: the client has an InputRequiredResult and has not
		// retried yet. Keep the message for the retry's stream, within a
		// stream's bound; only the final response is always kept.
		if m.Kind != wire.KindResponse && cl.heldBytes+len(m.Raw) > c.perStream() {
			cl.mu.Unlock()
			c.warn.Warn(c.log, "held_full").Int64("child_id", cl.childID).Msg("suspended call holds too much; child message dropped")
			return
		}
		cl.held = append(cl.held, clone(m.Raw))
		cl.heldBytes += len(m.Raw)
		cl.mu.Unlock()
		return
	}
	id, token, sk := cl.origID, cl.origToken, cl.sink
	cl.mu.Unlock()
	var out []byte
	var pm *wire.Message // out parsed, for a deliverFn: no one parses it again
	if cl.deliverFn != nil {
		pm = new(wire.Message)
	}
	switch {
	case m.Kind == wire.KindResponse:
		edits := []wire.Edit{{Span: m.ID, Value: id}}
		// A listen stream's closing result names its subscription
		// (subscriptions §Graceful closure): restore the client's id there.
		if cl.method == "subscriptions/listen" && m.Result.Present() {
			if meta, ok := wire.Field(m.Raw, m.Result, "_meta"); ok {
				if sub, ok := wire.Field(m.Raw, meta, wire.MetaSubscriptionID); ok {
					edits = append(edits, wire.Edit{Span: sub, Value: id})
				}
			}
		}
		if cl.complete {
			if e, ok := wire.CompleteResultEdit(m, cl.method); ok {
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

// deliver hands msg to cl's client; pm is msg parsed, or nil (deliverFn).
func (c *childConn) deliver(cl *call, sk *stream.Sink, msg []byte, pm *wire.Message, final bool) {
	if cl.sess != nil {
		cl.sess.settled(cl, final)
	}
	if cl.deliverFn != nil {
		cl.deliverFn(msg, pm, final)
		return
	}
	if !sk.Push(msg, final) {
		c.log.Debug().Int64("child_id", cl.childID).Msg("client stream gone; message dropped")
	}
}

// suspend detaches cl from its client stream after an InputRequiredResult
// went out on it; messages for cl are held until resume.
func (c *childConn) suspend(cl *call) {
	cl.mu.Lock()
	cl.sink = nil
	cl.mu.Unlock()
}

// resume attaches a suspended call to the retry's stream, under the retry's
// id and progress token, and replays what the child sent meanwhile. A
// retry without a token gets no progress: the first round's is forgotten
// ("Progress notifications MUST only reference tokens that were provided
// in an active request", basic/patterns/progress).
func (c *childConn) resume(cl *call, id, token []byte, sk *stream.Sink) {
	cl.mu.Lock()
	cl.origID, cl.sink, cl.origToken = id, sk, token
	held := cl.held
	cl.held, cl.heldBytes = nil, 0
	cl.mu.Unlock()
	for _, raw := range held {
		var m wire.Message
		if wire.Parse(raw, &m) == nil {
			c.route(cl, &m, m.Kind == wire.KindResponse)
		}
	}
}

func (c *childConn) onNotification(m *wire.Message) {
	switch {
	case m.Method == "notifications/progress" && m.ProgressToken.Present():
		// The token toward the child is the call's own id (see call).
		if id, ok := wire.ParseIntID(m.Bytes(m.ProgressToken)); ok {
			if cl := c.get(id); cl != nil {
				c.route(cl, m, false)
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
				c.route(cl, m, false)
				return
			}
		}
		c.log.Debug().Str("method", m.Method).Msg("notification for no open subscription; dropped")
		return
	case m.Method == "notifications/cancelled" && m.RequestID.Present():
		// A child may end a listen stream this way (2026-07-28
		// cancellation §Server-initiated); the stream just ends.
		if id, ok := wire.ParseIntID(m.Bytes(m.RequestID)); ok {
			if cl := c.take(id); cl != nil {
				if _, _, sk := cl.target(); sk != nil {
					sk.End()
				}
				if cl.sess != nil {
					cl.sess.settled(cl, true)
				}
				return
			}
		}
	}
	if m.Method == "notifications/message" {
		if cl := c.soleLogger(); cl != nil {
			c.route(cl, m, false)
			return
		}
	}
	c.owner.unrouted(c, m)
}

// soleCall returns the only call in flight that matches, or nil.
func (c *childConn) soleCall(match func(*call) bool) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found *call
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
func (c *childConn) soleLogger() *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logging != 1 {
		return nil
	}
	for _, cl := range c.calls {
		if cl.logLevel {
			return cl
		}
	}
	return nil
}

// failAll answers every pending call with an error: the child is gone, and
// every request gets exactly one response.
func (c *childConn) failAll(reason string, exitErr error) {
	c.mu.Lock()
	c.gone = true
	calls := c.calls
	c.calls = make(map[int64]*call)
	c.lim.Ended(len(calls))
	c.logging = 0
	c.mu.Unlock()
	var data []byte
	if exitErr != nil {
		data = wire.AppendString(append([]byte(nil), `{"exit":`...), exitErr.Error())
		data = append(data, '}')
	}
	for _, cl := range calls {
		id, _, sk := cl.target()
		msg := wire.ErrorResponse(id, wire.CodeInternalError, reason, data)
		if cl.internal != nil {
			cl.internal <- msg
			continue
		}
		if sk == nil && cl.deliverFn == nil {
			continue // suspended: the retry will find the call gone
		}
		c.deliver(cl, sk, msg, nil, true)
	}
}

// perStream is what one client stream may hold, which also bounds what the
// bridge keeps for one call or session while no stream is open.
func (c *childConn) perStream() int { return c.lim.PerStream() }

// pending returns the number of calls in flight.
func (c *childConn) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
