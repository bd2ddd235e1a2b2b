package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// ErrNoURL is returned by New without Config.URL.
var ErrNoURL = errors.New("connect: Config.URL is required")

// A Bridge relays one host's stdio session to a remote MCP endpoint.
type Bridge struct {
	cfg    Config
	log    zerolog.Logger
	tel    *telemetry.Scope // nil: no metrics, no spans
	remote *remote.Remote   // the MCP server as a peer over HTTP (bridge/remote)
	out    *lineio.Writer

	mu       sync.Mutex
	inflight map[string]*pending // by the host's raw request id

	// dispatchMu is held while the stdin reader dispatches a line, and by
	// Run to set stopping: once set, nothing new starts (no WaitGroup Add
	// can race the shutdown's Wait).
	dispatchMu sync.Mutex
	stopping   bool

	warns warnings

	notices hostNotices // the bridge's own log notifications to the host (notice.go)

	// Cross-era translation (era.go, detect.go): how points to the
	// strategy in force, passing (pass-through) until it is chosen at the
	// host's first request or when a pass-through exchange reveals the
	// remote's era; lh and mh hold the state of the two translations.
	how        atomic.Pointer[chosen]
	passing    *chosen
	sawRequest bool // the host's first request was seen (stdin loop only)
	lh         legacyHost
	mh         modernHost

	requests sync.WaitGroup // functions run by goRequest
	work     *workers       // the goroutines that run them (workers.go)
	// streams owns the long-lived listen streams (the GET stream and
	// HTTP+SSE re-establishment are the remote's: remote.Remote.Close);
	// Run joins it last, after which a stream asked for is refused (the
	// callers then close what its goroutine would).
	streams lifecycle.Group

	streamCtx   context.Context // cancelled when the host leaves
	stopStreams context.CancelFunc

	// posted is closed once every notification and response read so far
	// has been POSTed. stdio is ordered and HTTP POSTs are not: a request
	// must not overtake the notifications/initialized the host sent before
	// it (servers drop progress for a session not yet initialized).
	// Requests among themselves stay concurrent.
	posted chan struct{}
}

// pending is a host request in flight.
type pending struct {
	id        []byte
	method    string
	modern    bool
	cancel    context.CancelFunc
	cancelled atomic.Bool // the host cancelled it: answer nothing
	started   time.Time
	// op is the request's telemetry (nil: off). It is begun on the
	// request's goroutine, and read by whichever goroutine answers it.
	op atomic.Pointer[telemetry.Op]

	headerRetry bool // a HeaderMismatch was already retried once

	// b is the bridge p is relayed by (set by relay): p is the remote's
	// Call while remote.Forward sends it (request.go).
	b *Bridge

	// What the remote sees. Translation re-numbers requests and changes
	// their era; pass-through leaves wireID = id and wireModern = modern.
	// Both are written under Bridge.mu (setExchange, resetWire)
	// once p is in flight: wireModern is read by the stdin loop
	// (cancellation), wireID by pendingByWireID on a stream's reader.
	wireID     []byte
	wireModern bool

	// ex takes the remote's messages for p and the host's cancellation of
	// it: pass-through, or what its dispatch chose (setExchange). Guarded
	// by Bridge.mu once p is in flight.
	ex exchange

	// Each host request is answered exactly once, whatever the remote
	// sends (route.go): finalFor is the wire id whose response was taken
	// (guarded by Bridge.mu; translation re-numbers p between rounds), and
	// replied is set by the one write of the host's answer.
	finalFor []byte
	replied  atomic.Bool
}

// New returns a Bridge for cfg. It does not contact the remote.
func New(cfg Config) (*Bridge, error) {
	if cfg.URL == "" {
		return nil, ErrNoURL
	}
	b := &Bridge{
		cfg:      cfg,
		log:      cfg.Logger,
		inflight: map[string]*pending{},
	}
	rem, err := remote.New(remote.Config{
		URL: cfg.URL, Header: cfg.Header, HTTPClient: cfg.HTTPClient, Transport: cfg.Transport,
		MaxRetries: cfg.MaxRetries, MaxRetryWait: cfg.MaxRetryWait, MaxMessageSize: cfg.maxMessageSize(),
		RequestTimeout: cfg.RequestTimeout, HideRemoteDetail: cfg.HideRemoteDetail, Logger: cfg.Logger,
		Unsolicited: b.unsolicited,
		Stray:       func(msg []byte) { b.route(msg, source{}) },
	})
	if err != nil {
		return nil, err
	}
	b.remote = rem
	b.passing = &chosen{passThrough{b}}
	b.how.Store(b.passing)
	b.tel = cfg.Telemetry.ScopeFor(telemetry.Client, cfg.ServerName)
	b.lh.init(b)
	b.mh.init(b)
	b.posted = make(chan struct{})
	close(b.posted)
	b.work = newWorkers()
	return b, nil
}

// Run relays messages between the host (stdin, stdout) and the remote until
// the host closes stdin or ctx ends. It returns nil after a clean EOF.
//
// Reading stdin cannot be interrupted: when ctx ends first, the reader
// goroutine stays blocked until stdin is closed (at process exit).
func (b *Bridge) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	b.out = lineio.NewWriter(stdout)
	b.streamCtx, b.stopStreams = context.WithCancel(context.WithoutCancel(ctx))
	b.remote.Start(b.streamCtx)
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()

	// The reader dispatches each line itself: handle never blocks, and a
	// hand-off to another goroutine would add a wake-up to every request.
	readerDone := make(chan struct{})
	eof := make(chan struct{})
	go b.readStdin(reqCtx, stdin, eof, readerDone)

	var runErr error
	select {
	case <-eof:
	case <-ctx.Done():
		runErr = ctx.Err()
	}
	b.dispatchMu.Lock()
	b.stopping = true
	b.dispatchMu.Unlock()

	// The host is gone (or we are told to stop): long-lived streams end at
	// once, requests in flight get a bounded time to finish.
	b.stopStreams()
	if !waitTimeout(ctx, &b.requests, b.cfg.shutdownTimeout()) {
		// A signal ends the wait at once, the normal way hosts stop a
		// server: only requests of the host are worth a warning, not the
		// bridge's own work (a notification being posted).
		if n := b.inFlight(); n > 0 {
			b.log.Warn().Int("in_flight", n).Msg("shutdown timeout: abandoning in-flight requests")
		}
		cancelRequests()
		b.requests.Wait()
	}
	b.work.close()
	b.work.wait()
	b.streams.Wait()
	b.remote.Wait()
	// An input round that expired just now may still be answering the
	// remote (giveUp): it ends before the client closes.
	b.mh.rounds.Close()
	b.remote.Close()
	if runErr == nil {
		<-readerDone
	}
	return runErr
}

// readStdin is the stdin reader: it dispatches each line itself under
// dispatchMu until EOF (closing eof) or until Run sets stopping, and
// closes readerDone when it returns.
func (b *Bridge) readStdin(ctx context.Context, stdin io.Reader, eof, readerDone chan struct{}) {
	defer close(readerDone)
	r := lineio.NewReader(stdin, b.cfg.maxMessageSize())
	for {
		msg, err := r.Read()
		b.dispatchMu.Lock()
		if b.stopping {
			b.dispatchMu.Unlock()
			return // shutting down: nothing more is dispatched
		}
		switch {
		case err == nil:
			b.handle(ctx, append([]byte(nil), msg...))
		case errors.Is(err, lineio.ErrTooLong):
			var id []byte
			if tl, ok := errors.AsType[*lineio.TooLongError](err); ok {
				id = skippedID(tl)
			}
			e := b.log.Warn().Err(err)
			if id != nil {
				e = e.RawJSON("id", id)
			}
			e.Msg("host message too long; skipped")
			b.write(wire.ErrorResponse(id, wire.CodeInvalidRequest,
				fmt.Sprintf("mcp-bridge: message skipped: %v (raise --max-message-size)", err), nil))
		default:
			if !errors.Is(err, io.EOF) {
				b.log.Warn().Err(err).Msg("reading stdin")
			}
			b.dispatchMu.Unlock()
			close(eof)
			return
		}
		b.dispatchMu.Unlock()
	}
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

// requestCtx bounds one host request by Config.RequestTimeout, if set.
func (b *Bridge) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.cfg.RequestTimeout > 0 {
		return context.WithTimeout(ctx, b.cfg.RequestTimeout)
	}
	return ctx, func() {}
}

// inFlight counts the host's requests still waiting for their answer: one
// answered a moment ago may not have left the table yet.
func (b *Bridge) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, p := range b.inflight {
		if !p.replied.Load() && !p.cancelled.Load() {
			n++
		}
	}
	return n
}

// write sends one message to the host. Messages from HTTP may be
// pretty-printed; stdio needs one line, so they are compacted first.
func (b *Bridge) write(msg []byte) {
	if hasNewline(msg) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, msg); err != nil {
			b.log.Warn().Err(err).Msg("dropping a message that is not valid JSON")
			return
		}
		msg = buf.Bytes()
	}
	if err := b.out.Write(msg); err != nil {
		b.log.Debug().Err(err).Msg("writing to the host")
	}
}

func hasNewline(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// handle dispatches one message from the host.
func (b *Bridge) handle(ctx context.Context, raw []byte) {
	if !wire.Valid(raw) {
		b.write(wire.ErrorResponse(nil, wire.CodeParseError, "Parse error: the line is not valid JSON", nil))
		return
	}
	var m wire.Message
	if err := wire.Parse(raw, &m); err != nil {
		if errors.Is(err, wire.ErrNotMessage) && len(raw) > 0 && firstByte(raw) == '[' {
			b.strategy().batch(ctx, raw)
			return
		}
		b.write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.Refusal(err), nil))
		return
	}
	switch m.Kind {
	case wire.KindRequest:
		if !b.sawRequest {
			b.sawRequest = true
			b.decideMode(&m)
		}
		p := &pending{id: clone(m.IDBytes()), method: m.Method, modern: m.IsModern(), started: time.Now(), ex: pass{b}}
		p.wireID, p.wireModern = p.id, b.strategy().wireModern(p.modern)
		rctx, cancel := context.WithCancel(ctx)
		p.cancel = cancel
		if !b.register(p) {
			cancel()
			return
		}
		before := b.posted
		var initialized chan struct{}
		if m.Method == "initialize" {
			// What the host sends after initialize waits for its answer:
			// a pipelined notifications/initialized (or request) must
			// carry the Mcp-Session-Id that answer assigns ("the client
			// MUST include it in all of its subsequent HTTP requests",
			// 2025-11-25 transports §Session Management).
			initialized = make(chan struct{})
			b.posted = initialized
		}
		b.goRequest(func() {
			defer cancel()
			defer b.retire(p)
			if initialized != nil {
				defer close(initialized)
			}
			select {
			case <-before:
			case <-rctx.Done():
			}
			// On this goroutine, not the stdin reader's: a span costs
			// microseconds that must not serialize every request.
			b.relay(rctx, p, b.observe(p, &m))
		})
	case wire.KindNotification:
		b.notify(ctx, &m)
	case wire.KindResponse:
		// The host's answer to a server-to-client request: one the bridge
		// made up for a 2026-07-28 input request, or the remote's own.
		if !b.lh.deliver(&m) {
			b.strategy().respond(ctx, &m)
		}
	}
}

// goRequest runs f, the work of one host message, on a request goroutine;
// Run waits for it before it returns.
func (b *Bridge) goRequest(f func()) {
	b.requests.Add(1)
	b.work.Go(func() {
		defer b.requests.Done()
		f()
	})
}

// register puts p in flight, or answers it with an error when its id
// already is (the host broke JSON-RPC's uniqueness; the earlier request
// keeps the id).
func (b *Bridge) register(p *pending) bool {
	b.mu.Lock()
	if _, dup := b.inflight[string(p.id)]; dup {
		b.mu.Unlock()
		b.write(wire.ErrorResponse(p.id, wire.CodeInvalidRequest, "Invalid Request: id already in flight", nil))
		return false
	}
	b.inflight[string(p.id)] = p
	b.mu.Unlock()
	return true
}

// inOrder runs send after every earlier notification and response has been
// sent, without holding up the reading of stdin.
func (b *Bridge) inOrder(ctx context.Context, send func(context.Context)) {
	before, done := b.posted, make(chan struct{})
	b.posted = done
	b.goRequest(func() {
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

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

func (b *Bridge) retire(p *pending) {
	b.mu.Lock()
	mine := b.inflight[string(p.id)] == p
	if mine {
		delete(b.inflight, string(p.id))
	}
	b.mu.Unlock()
	if mine {
		endObserved(p)
	}
	if e := b.log.Debug(); mine && e.Enabled() {
		e.Str("method", p.method).RawJSON("id", p.id).Int64("took_ms", time.Since(p.started).Milliseconds()).Bool("cancelled", p.cancelled.Load()).Msg("request done")
	}
}

// notify relays a host notification. A cancellation is special: for a
// request sent as a 2026-07-28 request it closes the request's stream,
// which is how HTTP cancels (streamable-http §Cancellation); for a legacy
// one it is also forwarded.
func (b *Bridge) notify(ctx context.Context, m *wire.Message) {
	if m.Method == "notifications/cancelled" && m.RequestID.Present() {
		b.mu.Lock()
		p := b.inflight[string(m.Bytes(m.RequestID))]
		var ex exchange
		var closeStream bool
		if p != nil {
			// Under the lock: an exchange set after this sees the flag.
			p.cancelled.Store(true)
			ex, closeStream = p.ex, p.wireModern
		}
		b.mu.Unlock()
		if p != nil {
			switch {
			case ex.cancelled(p):
				return
			case closeStream:
				p.cancel()
				return
			}
			// A legacy request: the cancellation is forwarded below, and
			// the host wants no answer, so the bridge stops reading it too
			// (which legacy servers do not treat as a cancellation of their
			// own: "Disconnection SHOULD NOT be interpreted as ...").
			defer p.cancel()
		}
	}
	raw := clone(m.Raw)
	method := m.Method
	if method == "notifications/initialized" {
		b.notices.hostInitialized()
	}
	// The era may have been settled by the time it is sent.
	b.inOrder(ctx, func(ctx context.Context) { b.strategy().notify(ctx, method, raw) })
}

// passNotify posts a host notification as it is (passThrough).
func (b *Bridge) passNotify(ctx context.Context, method string, raw []byte) {
	var n wire.Message
	if wire.Parse(raw, &n) != nil {
		return
	}
	err := b.remote.Send(ctx, raw, b.remote.HeadersFor(&n), method)
	if method == "notifications/initialized" {
		if err != nil && b.legacyHostRejected(ctx, err) {
			return
		}
		b.remote.Initialized(raw)
	}
}

// unsolicited handles a message from the standalone GET stream, which
// belongs to no host request (a 2026-07-28 host expects none of it
// unasked: strategy.unasked).
func (b *Bridge) unsolicited(msg []byte) { b.route(msg, source{get: true}) }

// splitBatch handles the elements of a batch one by one: a translated
// session cannot forward a batch (2026-07-28 has none), so each element
// gets its own answer line.
func (b *Bridge) splitBatch(ctx context.Context, raw []byte) {
	elems, err := batchElements(raw)
	if err != nil || len(elems) == 0 {
		b.write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, "Invalid Request: empty or malformed batch", nil))
		return
	}
	for _, e := range elems {
		b.handle(ctx, clone(raw[e.Start:e.End]))
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
