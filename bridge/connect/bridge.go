package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// ErrNoURL is returned by New without Config.URL.
var ErrNoURL = errors.New("connect: Config.URL is required")

// A Bridge relays one host's stdio session to a remote MCP endpoint.
type Bridge struct {
	cfg    Config
	log    zerolog.Logger
	client *httpclient.Client
	out    *lineio.Writer

	mu       sync.Mutex
	inflight map[string]*pending // by the host's raw request id

	sess  legacySession
	tools toolCache

	requests sync.WaitGroup // request goroutines
	streams  sync.WaitGroup // long-lived streams (GET, listen)

	streamCtx    context.Context // cancelled when the host leaves
	stopStreams  context.CancelFunc
	nextInternal atomic.Int64

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

	headerRetry bool // a HeaderMismatch was already retried once
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
		client: &httpclient.Client{
			Endpoint:     cfg.URL,
			HTTPClient:   cfg.HTTPClient,
			Header:       cfg.Header,
			MaxRetries:   cfg.MaxRetries,
			MaxRetryWait: cfg.MaxRetryWait,
			MaxEventSize: cfg.maxMessageSize(),
			Logger:       cfg.Logger,
		},
	}
	b.sess.b = b
	b.posted = make(chan struct{})
	close(b.posted)
	return b, nil
}

type line struct {
	msg []byte
	err error
}

// Run relays messages between the host (stdin, stdout) and the remote until
// the host closes stdin or ctx ends. It returns nil after a clean EOF.
//
// Reading stdin cannot be interrupted: when ctx ends first, the reader
// goroutine stays blocked until stdin is closed (at process exit).
func (b *Bridge) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	b.out = lineio.NewWriter(stdout)
	b.streamCtx, b.stopStreams = context.WithCancel(context.WithoutCancel(ctx))
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()

	lines := make(chan line)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := lineio.NewReader(stdin, b.cfg.maxMessageSize())
		for {
			msg, err := r.Read()
			if err == nil {
				msg = append([]byte(nil), msg...)
			}
			select {
			case lines <- line{msg, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, lineio.ErrTooLong) {
				return
			}
		}
	}()

	var runErr error
loop:
	for {
		select {
		case l := <-lines:
			switch {
			case l.err == nil:
				b.handle(reqCtx, l.msg)
			case errors.Is(l.err, lineio.ErrTooLong):
				b.log.Warn().Err(l.err).Msg("host message too long; skipped")
				b.write(wire.ErrorResponse(nil, wire.CodeInvalidRequest,
					fmt.Sprintf("mcp-bridge: message skipped: %v (raise --max-message-size)", l.err), nil))
			default:
				if !errors.Is(l.err, io.EOF) {
					b.log.Warn().Err(l.err).Msg("reading stdin")
				}
				break loop
			}
		case <-ctx.Done():
			runErr = ctx.Err()
			break loop
		}
	}

	// The host is gone (or we are told to stop): long-lived streams end at
	// once, requests in flight get a bounded time to finish.
	b.stopStreams()
	if !waitTimeout(&b.requests, b.cfg.shutdownTimeout()) {
		b.log.Warn().Int("in_flight", b.inFlight()).Msg("shutdown timeout: abandoning in-flight requests")
		cancelRequests()
		b.requests.Wait()
	}
	b.streams.Wait()
	b.sess.terminate()
	b.client.CloseIdleConnections()
	if runErr == nil {
		<-readerDone
	}
	return runErr
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
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
	}
}

func (b *Bridge) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.inflight)
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
	for _, c := range b {
		if c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// handle dispatches one message from the host.
func (b *Bridge) handle(ctx context.Context, raw []byte) {
	if !json.Valid(raw) {
		b.write(wire.ErrorResponse(nil, wire.CodeParseError, "Parse error: the line is not valid JSON", nil))
		return
	}
	var m wire.Message
	if err := wire.Parse(raw, &m); err != nil {
		if errors.Is(err, wire.ErrNotMessage) && len(raw) > 0 && firstByte(raw) == '[' {
			b.requests.Go(func() { b.relayBatch(ctx, raw) })
			return
		}
		b.write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, "Invalid Request: not a JSON-RPC message", nil))
		return
	}
	switch m.Kind {
	case wire.KindRequest:
		p := &pending{id: clone(m.IDBytes()), method: m.Method, modern: m.IsModern(), started: time.Now()}
		rctx, cancel := context.WithCancel(ctx)
		p.cancel = cancel
		b.mu.Lock()
		if _, dup := b.inflight[string(p.id)]; dup {
			b.mu.Unlock()
			cancel()
			b.write(wire.ErrorResponse(p.id, wire.CodeInvalidRequest, "Invalid Request: id already in flight", nil))
			return
		}
		b.inflight[string(p.id)] = p
		b.mu.Unlock()
		before := b.posted
		b.requests.Go(func() {
			defer cancel()
			defer b.retire(p)
			select {
			case <-before:
			case <-rctx.Done():
			}
			b.relay(rctx, p, &m)
		})
	case wire.KindNotification:
		b.notify(ctx, &m)
	case wire.KindResponse:
		// The host's answer to a server-to-client request.
		b.inOrder(ctx, func(ctx context.Context) { b.post(ctx, m.Raw, b.headersFor(&m), "response") })
	}
}

// inOrder runs send after every earlier notification and response has been
// sent, without holding up the reading of stdin.
func (b *Bridge) inOrder(ctx context.Context, send func(context.Context)) {
	before, done := b.posted, make(chan struct{})
	b.posted = done
	b.requests.Go(func() {
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
	if b.inflight[string(p.id)] == p {
		delete(b.inflight, string(p.id))
	}
	b.mu.Unlock()
	if e := b.log.Debug(); e.Enabled() {
		e.Str("method", p.method).RawJSON("id", p.id).Dur("took", time.Since(p.started)).Bool("cancelled", p.cancelled.Load()).Msg("request done")
	}
}

// notify relays a host notification. A cancellation is special: for a
// 2026-07-28 request it closes the request's stream, which is how HTTP
// cancels (streamable-http §Cancellation); for a legacy one it is also
// forwarded.
func (b *Bridge) notify(ctx context.Context, m *wire.Message) {
	if m.Method == "notifications/cancelled" && m.RequestID.Present() {
		b.mu.Lock()
		p := b.inflight[string(m.Bytes(m.RequestID))]
		b.mu.Unlock()
		if p != nil {
			p.cancelled.Store(true)
			if p.modern {
				p.cancel()
				return
			}
		}
	}
	raw := clone(m.Raw)
	hdr := b.headersFor(m)
	method := m.Method
	b.inOrder(ctx, func(ctx context.Context) {
		b.post(ctx, raw, hdr, method)
		if method == "notifications/initialized" {
			b.sess.onInitialized(raw)
		}
	})
}

// post sends a message that expects no answer (202).
func (b *Bridge) post(ctx context.Context, raw []byte, hdr http.Header, what string) {
	resp, err := b.client.Post(ctx, raw, hdr)
	if err != nil {
		b.log.Warn().Err(err).Str("message", what).Msg("remote did not accept a notification/response")
		return
	}
	// A server may still answer with a stream (some do for notifications):
	// relay whatever comes.
	for {
		msg, err := resp.Next()
		if err != nil {
			break
		}
		b.emit(msg, nil)
	}
	resp.Close()
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
