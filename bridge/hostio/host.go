package hostio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// Config configures a Host. Zero values select the documented defaults.
type Config struct {
	// MaxMessageSize bounds one line from the host; if zero,
	// lineio.DefaultMaxLineSize. A longer line is skipped and answered
	// with an error (lineid.go).
	MaxMessageSize int

	// RequestTimeout bounds each request of the host's (RequestCtx); zero
	// means no timeout.
	RequestTimeout time.Duration

	// ShutdownTimeout bounds how long the functions started for the host's
	// messages may finish after the host closes stdin (Close). If zero,
	// 10s.
	ShutdownTimeout time.Duration

	// Notices, if set, reports whether the host takes the bridge's own
	// log notifications at all (LogNotice): the caller knows the host's
	// era.
	Notices func() bool

	// InFlight, if set, counts the host's requests still waiting for their
	// answer, for the warning when Close gives up on them.
	InFlight func() int

	// Logger receives logs; the zero value discards them. It must not write
	// to the host's stdout.
	Logger zerolog.Logger
}

// A Host is the stdio host's end of a bridge: New, then Run until the host
// closes stdin or ctx ends, then Close.
type Host struct {
	cfg Config
	log zerolog.Logger
	out *lineio.Writer

	// handler is Run's: what each line read is handed to, on the reader
	// goroutine (and each element of a batch SplitBatch splits).
	handler Handler

	// dispatchMu is held while the stdin reader dispatches a line, and by
	// Run to set stopping: once set, nothing new starts (no WaitGroup Add
	// can race the shutdown's Wait).
	dispatchMu sync.Mutex
	stopping   bool

	requests sync.WaitGroup // functions run by Go, GoRequest and InOrder
	work     *workers       // the goroutines that run them (workers.go)

	cancelRequests context.CancelFunc // ends the ctx the Handler's functions get
	readerDone     chan struct{}      // closed when the stdin reader returns
	eof            bool               // Run returned at EOF: the reader returns too

	// posted is closed once every notification and response read so far
	// has been POSTed. stdio is ordered and HTTP POSTs are not: a request
	// must not overtake the notifications/initialized the host sent before
	// it (servers drop progress for a session not yet initialized).
	// Requests among themselves stay concurrent.
	posted chan struct{}

	notices hostNotices // the bridge's own log notifications to the host (notice.go)
}

// Handler takes what the host sends, on the reader goroutine, one line
// after the other. Its functions must not block: they start the work of a
// message with Go, GoRequest or InOrder. Their ctx ends when Close cancels
// what still runs.
type Handler struct {
	// Message takes one JSON-RPC message (a request, a notification or a
	// response), read from a line that is valid JSON. m is the callee's:
	// nothing reads it after the call.
	Message func(ctx context.Context, m *wire.Message)
	// Batch takes a JSON array (a 2025-03-26 batch) as it came, with the
	// spans of its elements (at least one); SplitBatch hands them to
	// Message one by one.
	Batch func(ctx context.Context, raw []byte, elems []wire.Span)
}

// New returns a Host for cfg. It reads nothing before Run.
func New(cfg Config) *Host {
	h := &Host{cfg: cfg, log: cfg.Logger}
	h.posted = make(chan struct{})
	close(h.posted)
	h.work = newWorkers()
	return h
}

// Run writes to the host on stdout (Write) and hands each line the host
// sends on stdin to handler until the host closes stdin (nil) or ctx ends
// (ctx.Err()); then nothing more is dispatched. The functions the handler
// started may outlive Run: Close waits for them, then ends them.
//
// Reading stdin cannot be interrupted: when ctx ends first, the reader
// goroutine stays blocked until stdin is closed (at process exit).
func (h *Host) Run(ctx context.Context, stdin io.Reader, stdout io.Writer, handler Handler) error {
	h.out = lineio.NewWriter(stdout)
	h.handler = handler
	var reqCtx context.Context
	reqCtx, h.cancelRequests = context.WithCancel(context.WithoutCancel(ctx))

	// The reader dispatches each line itself: handler never blocks, and a
	// hand-off to another goroutine would add a wake-up to every request.
	h.readerDone = make(chan struct{})
	eof := make(chan struct{})
	go h.readStdin(reqCtx, stdin, eof)

	var runErr error
	select {
	case <-eof:
	case <-ctx.Done():
		runErr = ctx.Err()
	}
	h.dispatchMu.Lock()
	h.stopping = true
	h.dispatchMu.Unlock()
	h.eof = runErr == nil
	return runErr
}

// readStdin is the stdin reader: it dispatches each line itself under
// dispatchMu until EOF (closing eof) or until Run sets stopping, and
// closes readerDone when it returns.
func (h *Host) readStdin(ctx context.Context, stdin io.Reader, eof chan struct{}) {
	defer close(h.readerDone)
	r := lineio.NewReader(stdin, h.cfg.MaxMessageSize)
	for {
		msg, err := r.Read()
		h.dispatchMu.Lock()
		if h.stopping {
			h.dispatchMu.Unlock()
			return // shutting down: nothing more is dispatched
		}
		switch {
		case err == nil:
			h.dispatch(ctx, append([]byte(nil), msg...))
		case errors.Is(err, lineio.ErrTooLong):
			var id []byte
			if tl, ok := errors.AsType[*lineio.TooLongError](err); ok {
				id = skippedID(tl)
			}
			e := h.log.Warn().Err(err)
			if id != nil {
				e = e.RawJSON("id", id)
			}
			e.Msg("host message too long; skipped")
			h.Write(wire.ErrorResponse(id, wire.CodeInvalidRequest,
				fmt.Sprintf("mcp-bridge: message skipped: %v (raise --max-message-size)", err), nil))
		default:
			if !errors.Is(err, io.EOF) {
				h.log.Warn().Err(err).Msg("reading stdin")
			}
			h.dispatchMu.Unlock()
			close(eof)
			return
		}
		h.dispatchMu.Unlock()
	}
}

// dispatch dispatches one line from the host: a message to
// Handler.Message, a batch to Handler.Batch; what is neither is answered
// here.
func (h *Host) dispatch(ctx context.Context, raw []byte) {
	if !wire.Valid(raw) {
		h.Write(wire.ErrorResponse(nil, wire.CodeParseError, "Parse error: the line is not valid JSON", nil))
		return
	}
	var m wire.Message
	if err := wire.Parse(raw, &m); err != nil {
		if errors.Is(err, wire.ErrNotMessage) && len(raw) > 0 && wire.FirstByte(raw) == '[' {
			h.batch(ctx, raw)
			return
		}
		h.Write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.Refusal(err), nil))
		return
	}
	if m.Kind == wire.KindNotification && m.Method == "notifications/initialized" {
		h.notices.ready.Store(true) // LogNotice may send from now on
	}
	h.handler.Message(ctx, &m)
}

// batch hands a batch on with its elements; an empty or malformed one is
// answered here.
func (h *Host) batch(ctx context.Context, raw []byte) {
	elems, err := wire.BatchElements(raw)
	if err != nil || len(elems) == 0 {
		h.Write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, "Invalid Request: empty or malformed batch", nil))
		return
	}
	h.handler.Batch(ctx, raw, elems)
}

// Close ends what Run started; call it after Run returned. The functions
// started by Go, GoRequest and InOrder get up to Config.ShutdownTimeout to
// finish; then their context is cancelled and Close waits for them, ends
// the idle workers, and after a clean EOF joins the stdin reader.
func (h *Host) Close(ctx context.Context) {
	d := h.cfg.ShutdownTimeout
	if d <= 0 {
		d = 10 * time.Second
	}
	if !waitTimeout(ctx, &h.requests, d) && h.cfg.InFlight != nil {
		// A signal ends the wait at once, the normal way hosts stop a
		// server: only requests of the host are worth a warning, not the
		// bridge's own work (a notification being posted).
		if n := h.cfg.InFlight(); n > 0 {
			h.log.Warn().Int("in_flight", n).Msg("shutdown timeout: abandoning in-flight requests")
		}
	}
	h.cancelRequests()
	h.requests.Wait()
	h.work.close()
	h.work.wait()
	if h.eof {
		<-h.readerDone
	}
}

// RequestCtx bounds one host request by Config.RequestTimeout, if set.
func (h *Host) RequestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.cfg.RequestTimeout > 0 {
		return context.WithTimeout(ctx, h.cfg.RequestTimeout)
	}
	return ctx, func() {}
}

// waitTimeout waits for wg up to d. A signal (ctx) cuts the wait short: a
// host that sends SIGTERM after closing stdin wants the bridge gone now,
// not after the drain timeout.
func waitTimeout(ctx context.Context, wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// Write sends one message to the host. Messages from HTTP may be
// pretty-printed; stdio needs one line, so they are compacted first.
func (h *Host) Write(msg []byte) {
	if hasNewline(msg) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, msg); err != nil {
			h.log.Warn().Err(err).Msg("dropping a message that is not valid JSON")
			return
		}
		msg = buf.Bytes()
	}
	if err := h.out.Write(msg); err != nil {
		h.log.Debug().Err(err).Msg("writing to the host")
	}
}

func hasNewline(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// Go runs f, the work of one host message, on a request goroutine; Close
// waits for it. Only the handler calls it (on the reader goroutine, under
// dispatchMu: nothing starts once Run stopped the dispatch).
func (h *Host) Go(f func()) {
	h.requests.Add(1)
	h.work.Go(func() {
		defer h.requests.Done()
		f()
	})
}

// GoRequest runs f, the work of one host request, on a request goroutine
// once every notification and response the host sent before it has been
// sent on (posted), or once ctx ended; requests among themselves stay
// concurrent. With hold, what the host sends after it waits in turn until
// f returned. Only the handler calls it.
func (h *Host) GoRequest(ctx context.Context, hold bool, f func()) {
	before := h.posted
	var held chan struct{}
	if hold {
		held = make(chan struct{})
		h.posted = held
	}
	// One function for the worker, as Go's: no second closure per request.
	h.requests.Add(1)
	h.work.Go(func() {
		defer h.requests.Done()
		if held != nil {
			defer close(held)
		}
		select {
		case <-before:
		case <-ctx.Done():
		}
		f()
	})
}

// InOrder runs send after every earlier notification and response has been
// sent, without holding up the reading of stdin. Only the handler calls it.
func (h *Host) InOrder(ctx context.Context, send func(context.Context)) {
	before, done := h.posted, make(chan struct{})
	h.posted = done
	h.Go(func() {
		defer close(done)
		select {
		case <-before:
		case <-ctx.Done():
			return
		}
		// A notification that hangs must not stall the session forever.
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		send(ctx)
	})
}

// SplitBatch handles the elements of a batch one by one (as lines of
// their own): a translated session cannot forward a batch (2026-07-28 has
// none), so each element gets its own answer line. Only the handler calls
// it.
func (h *Host) SplitBatch(ctx context.Context, raw []byte, elems []wire.Span) {
	for _, e := range elems {
		el := raw[e.Start:e.End]
		if wire.FirstByte(el) == '[' {
			// JSON-RPC 2.0 §6: a batch's elements are Request objects. A
			// batch inside a batch is an Invalid Request, not a batch to
			// split again: a line of nested arrays would otherwise recurse
			// once per level, copying the rest of the line each time.
			h.Write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, "Invalid Request: a batch inside a batch", nil))
			continue
		}
		h.dispatch(ctx, append([]byte(nil), el...))
	}
}
