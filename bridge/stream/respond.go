package stream

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A Responder writes one HTTP response that is either a single JSON message
// or an SSE stream, decided by what arrives first (the response alone: JSON;
// anything else, or a long wait: SSE).
type Responder struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	hdr       http.Header // w's header map, which outlives w once detached (nil once the head is written)
	modern    bool        // map MCP error codes to HTTP statuses (2026-07-28)
	sessionID string      // legacy: set Mcp-Session-Id on the response
	sse       bool
	started   bool
	buf       []byte

	// abort may come from another goroutine (the budget cutting this
	// stream) and must never touch a response whose handler returned.
	amu              sync.Mutex
	aborted, retired bool

	// A legacy session's stream: every event gets an id and is logged for
	// replay (replay.go, Resumable). prime: the session negotiated
	// 2025-11-25, whose clients expect a priming event.
	rl    *ReplayLog
	st    *ReplayStream
	prime bool

	// detachable: the stream may leave net/http when it starts to wait
	// (detach.go, MayDetach); its SSE response then asks for the
	// connection to close. early: it may leave before the response is
	// decided (a call that asked for progress: a long one). raw: set once
	// it has left — w and rc are gone, the head and the body go to raw.
	detachable, early bool
	raw               *rawStream
}

// abort ends a write blocked on a client that does not read.
func (r *Responder) abort() {
	r.amu.Lock()
	defer r.amu.Unlock()
	if r.retired {
		return
	}
	r.aborted = true
	r.abortLocked()
}

func (r *Responder) abortLocked() {
	if r.raw != nil {
		_ = r.raw.c.SetWriteDeadline(time.Now())
		return
	}
	_ = r.rc.SetWriteDeadline(time.Now())
}

// retire makes later aborts no-ops; the handler is about to return.
func (r *Responder) retire() {
	r.amu.Lock()
	r.retired = true
	r.amu.Unlock()
}

// Resumable makes the response's events part of st.
func (r *Responder) Resumable(rl *ReplayLog, st *ReplayStream, prime bool) {
	if st != nil {
		r.rl, r.st, r.prime = rl, st, prime
	}
}

// NewResponder returns the responder of the request w answers; modern: a
// 2026-07-28 request, whose JSON errors map to HTTP statuses.
func NewResponder(w http.ResponseWriter, modern bool) *Responder {
	return &Responder{w: w, rc: http.NewResponseController(w), hdr: w.Header(), modern: modern}
}

// MayDetach lets the response leave net/http when it starts to wait, if
// req's connection allows it (canDetach); early: even before the response
// is decided (a call that asked for progress). Call it before any write.
func (r *Responder) MayDetach(req *http.Request, early bool) {
	r.detachable, r.early = canDetach(r.w, req), early
}

// SetSessionID makes the response carry Mcp-Session-Id id (a legacy
// initialize's answer).
func (r *Responder) SetSessionID(id string) { r.sessionID = id }

// ForceSSE makes the response an SSE stream even for a single message (a
// batch's answers, one event each).
func (r *Responder) ForceSSE() { r.sse = true }

// WriteHeader ends a response that has no body of its own with code (an
// HTTP+SSE POST whose answers go on the session's stream).
func (r *Responder) WriteHeader(code int) { r.w.WriteHeader(code) }

func (r *Responder) header() http.Header {
	h := r.hdr
	if r.sessionID != "" {
		h.Set(wire.HeaderSessionID, r.sessionID)
	}
	return h
}

func (r *Responder) StartSSE() error {
	if r.started {
		return nil
	}
	r.started, r.sse = true, true
	h := r.header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	// 2026-07-28 streamable-http: servers SHOULD include X-Accel-Buffering:
	// no, so that reverse proxies pass each event on at once.
	h.Set("X-Accel-Buffering", "no")
	if r.detachable || r.raw != nil {
		// The connection is or will be hijacked (detach.go) and cannot go
		// back to net/http for another request.
		h.Set("Connection", "close")
	}
	if r.raw != nil {
		err := r.raw.head(http.StatusOK, h, nil)
		r.hdr = nil // written: a waiting stream keeps no header map
		if err != nil {
			return err
		}
		if o := r.raw.obs; o != nil {
			o.SSEOpened()
		}
	} else {
		r.w.WriteHeader(http.StatusOK)
		// A stream may legitimately outlive any server-wide write timeout.
		_ = r.rc.SetWriteDeadline(time.Time{})
		r.amu.Lock()
		if r.aborted { // an abort raced with the line above
			_ = r.rc.SetWriteDeadline(time.Now())
		}
		r.amu.Unlock()
	}
	if r.prime {
		// 2025-11-25 transports: "The server SHOULD immediately send an SSE
		// event consisting of an event ID and an empty data field in order
		// to prime the client to reconnect", and before a connection closes
		// without ending the stream "SHOULD send an SSE event with a
		// standard retry field" ("The client MUST respect the retry
		// field"): a broken connection is such a close, so the hint goes
		// out first.
		b := append(append([]byte("id: "), r.rl.lastID(r.st)...), "\nretry: "...)
		b = append(strconv.AppendInt(b, retryMillis, 10), "\ndata: \n\n"...)
		return r.Send(b)
	}
	if r.raw != nil {
		return nil
	}
	return r.rc.Flush()
}

// Send writes parts and flushes them to the client: through net/http, or
// as one chunk of a detached stream.
func (r *Responder) Send(parts ...[]byte) error {
	if r.raw != nil {
		return r.raw.send(parts...)
	}
	for _, p := range parts {
		if _, err := r.w.Write(p); err != nil {
			return err
		}
	}
	return r.rc.Flush()
}

var (
	eventPrefix = []byte("event: message\ndata: ")
	eventSuffix = []byte("\n\n")
)

// Event writes one SSE event carrying msg and flushes it; on a resumable
// stream it is logged first, under its id.
func (r *Responder) Event(msg []byte) error {
	if err := r.StartSSE(); err != nil {
		return err
	}
	var id []byte
	if r.st != nil {
		id = r.rl.record(r.st, msg)
	}
	return r.writeEvent(id, msg)
}

// writeEvent writes an event with an optional id (replayed events keep
// their own).
func (r *Responder) writeEvent(id, msg []byte) error {
	if err := r.StartSSE(); err != nil {
		return err
	}
	b := r.buf[:0]
	if id != nil {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	b = append(b, eventPrefix...)
	if len(msg) > 32<<10 {
		// A large message goes out from its own slice: net/http's writer
		// passes big writes straight through, and a copy of a 16 MiB
		// result here would cost as much as the rest of the path.
		r.buf = b
		return r.Send(b, msg, eventSuffix)
	}
	r.buf = append(append(b, msg...), eventSuffix...)
	return r.Send(r.buf)
}

// Replay writes an event of the replay log again, under its own id.
func (r *Responder) Replay(ev ReplayEvent) error {
	return r.writeEvent(eventID(ev.stream, ev.seq), ev.msg)
}

func (r *Responder) comment() error {
	if err := r.StartSSE(); err != nil {
		return err
	}
	return r.Send(keepaliveComment)
}

var keepaliveComment = []byte(": keepalive\n\n")

// json writes msg as the whole response.
func (r *Responder) json(msg []byte) error {
	r.started = true
	status := http.StatusOK
	if r.modern && bytes.Contains(msg, []byte(`"error"`)) {
		var m wire.Message
		if wire.Parse(msg, &m) == nil && m.Error.Present() {
			status = modernErrorStatus(m.ErrorCode)
		}
	}
	h := r.header()
	h.Set("Content-Type", "application/json")
	if r.raw != nil {
		h.Set("Connection", "close")
		return r.raw.head(status, h, msg)
	}
	r.w.WriteHeader(status)
	_, err := r.w.Write(msg)
	return err
}

// modernErrorStatus maps an error a 2026-07-28 request ends with to its
// HTTP status (streamable-http §Protocol version header, basic §Error
// codes): header and version problems are 400, an unknown method is 404.
func modernErrorStatus(code int) int {
	switch code {
	case wire.CodeHeaderMismatch, wire.CodeMissingCapability, wire.CodeUnsupportedVersion:
		return http.StatusBadRequest
	case wire.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// A clock ticks for every stream at once: one timer per Engine instead of
// one per request. A nil clock never ticks. Streams in a select wait on
// tick's channel; streams served by events subscribe.
type clock struct {
	mu   sync.Mutex
	ch   chan struct{}
	subs map[*evStream]struct{}
}

func (c *clock) subscribe(e *evStream) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[*evStream]struct{}{}
	}
	c.subs[e] = struct{}{}
	c.mu.Unlock()
}

func (c *clock) unsubscribe(e *evStream) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.subs, e)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{ch: make(chan struct{})} }

func (c *clock) tick() <-chan struct{} {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *clock) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.mu.Lock()
			close(c.ch)
			c.ch = make(chan struct{})
			subs := make([]*evStream, 0, len(c.subs))
			for e := range c.subs {
				subs = append(subs, e)
			}
			c.mu.Unlock()
			// Outside the lock: a tick may wait a little for a writer.
			deadline := time.Now().Add(tickRound)
			for _, e := range subs {
				if ctx.Err() != nil {
					return
				}
				e.tick(deadline)
			}
		}
	}
}

// PumpResult says how a pump ended.
type PumpResult int

const (
	PumpComplete   PumpResult = iota // every expected message was written
	PumpClientGone                   // the client disconnected or a write failed
	PumpStopped                      // the bridge ended the stream (shutdown, session end)
	pumpDetach                       // a detachable stream is about to wait: detach it (detach.go; internal)
)

// pump copies the sink's messages to the response until the sink is
// complete, the client goes away, or stop or stop2 is closed (nil channels
// never fire). It writes keepalive comments on a quiet stream, turning a
// still-undecided response into SSE.
func pump(ctx context.Context, r *Responder, s *Sink, ka *clock, stop, stop2 <-chan struct{}) PumpResult {
	s.setAbort(r.abort)
	detaching := false
	defer func() {
		if !detaching { // the detached stream's pump goes on with both
			s.setAbort(nil)
			r.retire()
		}
	}()
	ticks := 0
	for {
		res, more := r.run(s, opStep)
		if !more {
			return res
		}
		if r.detachable && (r.sse || r.early && !r.started) {
			detaching = true
			return pumpDetach
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return PumpClientGone
		case <-stop:
			res, _ := r.run(s, opFinish)
			return res
		case <-stop2:
			res, _ := r.run(s, opFinish)
			return res
		case <-ka.tick():
			// The clock is shared by every stream, so the first tick may
			// come at once: a keepalive goes out from the second on, when
			// the stream has been quiet for at least one interval.
			if ticks++; ticks >= 2 {
				if res, more := r.run(s, opComment); !more {
					return res
				}
			}
		}
	}
}

// What a pump does between its waits.
type pumpOp int

const (
	opStep    pumpOp = iota // write what the sink holds
	opFinish                // the bridge ends the stream: write what is left
	opComment               // a keepalive
	opEnd                   // a detached stream's body is complete: end it (more: it was)
)

// run does op for the pump: in place for a stream still in its handler;
// for a detached one, by a writer (writers.go), so that the stream's own
// goroutine stays small while it waits.
func (r *Responder) run(s *Sink, op pumpOp) (PumpResult, bool) {
	if r.raw == nil {
		return r.do(s, op)
	}
	j := &r.raw.job
	j.r, j.s, j.op = r, s, op
	r.raw.writers.do(j)
	j.r, j.s = nil, nil
	return j.res, j.more
}

// do carries out op; more reports that the pump goes on waiting.
func (r *Responder) do(s *Sink, op pumpOp) (PumpResult, bool) {
	switch op {
	case opFinish:
		return r.finish(s), false
	case opComment:
		if r.comment() != nil {
			return PumpClientGone, false
		}
		return 0, true
	case opEnd:
		if r.raw.finishBody() != nil {
			return PumpClientGone, false
		}
		return PumpComplete, true
	}
	msgs, complete, overrun := s.take()
	if overrun {
		s.drop(msgs)
		return PumpClientGone, false
	}
	if !r.started && !r.sse && complete && len(msgs) == 1 {
		err := r.json(msgs[0])
		s.drop(msgs)
		if err != nil {
			return PumpClientGone, false
		}
		return PumpComplete, false
	}
	for i, m := range msgs {
		err := r.Event(m)
		r.release(s, msgs[i:i+1])
		if err != nil {
			s.drop(msgs[i+1:])
			return PumpClientGone, false
		}
	}
	if complete {
		if !r.started { // e.g. a stream ended before anything was sent
			_ = r.StartSSE()
		}
		return PumpComplete, false
	}
	return 0, true
}

// release gives back messages taken from s once written (or not): a
// resumable stream's events live on in the replay log, which owns their
// buffers from now on (released from the budget, not recycled); anything
// else is dropped and its buffer recycled.
func (r *Responder) release(s *Sink, msgs [][]byte) {
	if r.st != nil {
		s.keep(msgs)
		return
	}
	s.drop(msgs)
}

// finish writes what is still queued when the bridge ends a stream, so an
// error response queued just before the stop is not lost.
func (r *Responder) finish(s *Sink) PumpResult {
	msgs, complete, _ := s.take()
	defer r.release(s, msgs)
	if !r.started && complete && len(msgs) == 1 {
		if r.json(msgs[0]) != nil {
			return PumpClientGone
		}
		return PumpComplete
	}
	if !r.started {
		_ = r.StartSSE()
	}
	for _, m := range msgs {
		if r.Event(m) != nil {
			return PumpClientGone
		}
	}
	if complete {
		return PumpComplete
	}
	return PumpStopped
}
