package connect

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/hostio"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// ErrNoURL is returned by New without Config.URL.
var ErrNoURL = errors.New("connect: Config.URL is required")

// A Bridge relays one host's stdio session to a remote MCP endpoint.
type Bridge struct {
	cfg    Config
	log    zerolog.Logger
	tel    *telemetry.Scope // nil: no metrics, no spans
	remote *remote.Remote   // the MCP server as a peer over HTTP (bridge/remote)
	host   *hostio.Host     // the stdio host's end: stdin reader, stdout writer, request goroutines

	mu       sync.Mutex
	inflight map[string]*pending // by the host's raw request id

	warns warnings

	// Cross-era translation (era.go, detect.go): how points to the
	// strategy in force, passing (pass-through) until it is chosen at the
	// host's first request or when a pass-through exchange reveals the
	// remote's era; lh and mh hold the state of the two translations.
	how        atomic.Pointer[chosen]
	passing    *chosen
	sawRequest bool // the host's first request was seen (stdin loop only)
	lh         legacyHost
	mh         modernHost

	// streams owns the long-lived listen streams (the GET stream and
	// HTTP+SSE re-establishment are the remote's: remote.Remote.Close);
	// Run joins it last, after which a stream asked for is refused (the
	// callers then close what its goroutine would).
	streams lifecycle.Group

	streamCtx   context.Context // cancelled when the host leaves
	stopStreams context.CancelFunc
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
	b.host = hostio.New(hostio.Config{MaxMessageSize: cfg.maxMessageSize(), RequestTimeout: cfg.RequestTimeout,
		ShutdownTimeout: cfg.ShutdownTimeout, InFlight: b.inFlight, Logger: cfg.Logger,
		Notices: func() bool { return b.strategy().notices() }})
	return b, nil
}

// Run relays messages between the host (stdin, stdout) and the remote until
// the host closes stdin or ctx ends. It returns nil after a clean EOF.
// Reading stdin cannot be interrupted (hostio.Host.Run): when ctx ends first,
// the reader goroutine stays blocked until stdin is closed (at process exit).
func (b *Bridge) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	b.streamCtx, b.stopStreams = context.WithCancel(context.WithoutCancel(ctx))
	b.remote.Start(b.streamCtx)
	runErr := b.host.Run(ctx, stdin, stdout, hostio.Handler{Message: b.handle, Batch: b.batch})

	// The host is gone (or we are told to stop): long-lived streams end at
	// once, requests in flight get a bounded time to finish (Host.Close,
	// which then cancels and joins them).
	b.stopStreams()
	b.host.Close(ctx)
	b.streams.Wait()
	b.remote.Wait()
	// An input round that expired just now may still be answering the
	// remote (giveUp): it ends before the client closes.
	b.mh.rounds.Close()
	b.remote.Close()
	return runErr
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

// LogToHost sends the host an MCP log notification (notifications/message)
// of level, from logger "mcp-bridge", carrying data: something a person
// at the host has to act on (a device login's code), which stderr alone
// may not reach. It reports whether it was sent (hostio.Host.LogNotice
// says when it is).
func (b *Bridge) LogToHost(level string, data any) bool { return b.host.LogNotice(level, data) }

// handle dispatches one message from the host (hostio.Handler.Message;
// the line was valid JSON and one JSON-RPC message).
func (b *Bridge) handle(ctx context.Context, m *wire.Message) {
	switch m.Kind {
	case wire.KindRequest:
		if !b.sawRequest {
			b.sawRequest = true
			b.decideMode(m)
		}
		p := &pending{id: clone(m.IDBytes()), method: m.Method, modern: m.IsModern(), started: time.Now(), ex: pass{b}}
		p.wireID, p.wireModern = p.id, b.strategy().wireModern(p.modern)
		rctx, cancel := context.WithCancel(ctx)
		p.cancel = cancel
		if !b.register(p) {
			cancel()
			return
		}
		// What the host sends after initialize waits for its answer:
		// a pipelined notifications/initialized (or request) must
		// carry the Mcp-Session-Id that answer assigns ("the client
		// MUST include it in all of its subsequent HTTP requests",
		// 2025-11-25 transports §Session Management).
		b.host.GoRequest(rctx, m.Method == "initialize", func() {
			defer cancel()
			defer b.retire(p)
			// On this goroutine, not the stdin reader's: a span costs
			// microseconds that must not serialize every request.
			b.relay(rctx, p, b.observe(p, m))
		})
	case wire.KindNotification:
		b.notify(ctx, m)
	case wire.KindResponse:
		// The host's answer to a server-to-client request: one the bridge
		// made up for a 2026-07-28 input request, or the remote's own.
		if !b.lh.deliver(m) {
			b.strategy().respond(ctx, m)
		}
	}
}

// batch dispatches a batch from the host (hostio.Handler.Batch).
func (b *Bridge) batch(ctx context.Context, raw []byte, elems []wire.Span) {
	b.strategy().batch(ctx, raw, elems)
}

// register puts p in flight, or answers it with an error when its id
// already is (the host broke JSON-RPC's uniqueness; the earlier request
// keeps the id).
func (b *Bridge) register(p *pending) bool {
	b.mu.Lock()
	if _, dup := b.inflight[string(p.id)]; dup {
		b.mu.Unlock()
		b.host.Write(wire.ErrorResponse(p.id, wire.CodeInvalidRequest, "Invalid Request: id already in flight", nil))
		return false
	}
	b.inflight[string(p.id)] = p
	b.mu.Unlock()
	return true
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
	// The era may have been settled by the time it is sent.
	b.host.InOrder(ctx, func(ctx context.Context) { b.strategy().notify(ctx, method, raw) })
}

// passNotify posts a host notification as it is (passThrough).
func (b *Bridge) passNotify(ctx context.Context, method string, raw []byte) {
	err := b.remote.Tell(ctx, raw, method)
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

func clone(b []byte) []byte { return append([]byte(nil), b...) }
