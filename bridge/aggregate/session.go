package aggregate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// A session is one upstream client session and the downstreams dialed for
// it.
type session struct {
	cfg  *Config
	log  zerolog.Logger
	warn ratelog.Kinds

	ctx    context.Context // ends when the session ends
	cancel context.CancelFunc
	up     *lineio.Writer // to the client

	// The session's goroutines, one lifecycle.Group per shutdown phase
	// (shutdown joins them in this order); each refuses new goroutines
	// once its phase has begun, so a late start (update, from another
	// goroutine) never adds to a group being waited on.
	sem      chan struct{}   // one token per request being handled
	handlers lifecycle.Group // one per client request
	readers  lifecycle.Group // one per downstream
	writers  lifecycle.Group // one per downstream
	joiners  lifecycle.Group // one per server, from its start to its join

	initStarted atomic.Bool
	initDone    func() // ends the initialize request's stay in flight
	// ready is closed once initialize has been answered.
	ready chan struct{}
	// ds holds the routable servers: an immutable slice, replaced (under
	// mu) when a server joins; see publish and downstreams.
	ds atomic.Pointer[[]*downstream]
	// offered is what the initialize answer announced; written before
	// ready closes.
	offered capabilities

	mu       sync.Mutex
	closing  bool
	servers  []Server             // by index; a server added later is appended (update)
	removed  []bool               // by index: taken out by update
	stops    []context.CancelFunc // by index: ends its start, retries and join
	params   []byte               // the servers' initialize params, once initialize began
	all      []*downstream        // every downstream dialed, for shutdown
	inflight map[string]context.CancelFunc
	nextUp   int64                // ids and tokens minted for the client
	relays   map[int64]relay      // our id of a relayed request -> its origin
	upTokens map[int64]tokenOwner // our progress token in a relayed request -> its origin
	cat      catalog
	subs     map[subKey]string // a downstream's resource URI -> the URI the client subscribed to
	reported map[string]bool   // collisions already logged
}

func newSession(a *Aggregator, parent context.Context, stdout io.Writer) *session {
	ctx, cancel := context.WithCancel(parent)
	s := &session{
		cfg:      &a.cfg,
		servers:  a.servers(),
		log:      a.cfg.Logger,
		ctx:      ctx,
		cancel:   cancel,
		up:       lineio.NewWriter(stdout),
		sem:      make(chan struct{}, a.cfg.MaxInflight),
		ready:    make(chan struct{}),
		inflight: map[string]context.CancelFunc{},
		relays:   map[int64]relay{},
		upTokens: map[int64]tokenOwner{},
		subs:     map[subKey]string{},
		reported: map[string]bool{},
	}
	s.cat.init()
	return s
}

func (s *session) run(parent context.Context, stdin io.Reader, stdout io.Writer) error {
	stop := context.AfterFunc(parent, func() {
		// The only way to end a blocked read (and a blocked write).
		if c, ok := stdin.(io.Closer); ok {
			c.Close()
		}
		if c, ok := stdout.(io.Closer); ok {
			c.Close()
		}
	})
	defer stop()
	rd := lineio.NewReader(stdin, s.cfg.MaxMessageSize)
	var err error
	for {
		line, rerr := rd.Read()
		if errors.Is(rerr, lineio.ErrTooLong) {
			s.warn.Warn(s.log, "client-too-long").Err(rerr).Msg("aggregate: skipped an over-long message from the client")
			continue
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
		s.fromClient(line)
	}
	s.shutdown()
	if parent.Err() != nil {
		return parent.Err()
	}
	if err != nil {
		return fmt.Errorf("aggregate: reading the client: %w", err)
	}
	return nil
}

// shutdown ends the session: handlers are cancelled and joined, every
// downstream is closed (all at once: each may take its terminate delay)
// and its reader joined.
func (s *session) shutdown() {
	s.cancel()
	s.mu.Lock()
	s.closing = true
	all := s.all
	s.mu.Unlock()
	for _, d := range all {
		d.closeInput() // unblocks a write to a server that stopped reading
	}
	s.handlers.Wait()
	// The servers' starts and joins, begun by the initialize handler: the
	// session's context has ended, so each returns once its dial does.
	s.joiners.Wait()
	s.mu.Lock()
	all = s.all // the starts may have added some
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, d := range all {
		wg.Go(d.close)
	}
	wg.Wait()
	s.readers.Wait()
	// Nothing posts any more: the client's reader has ended, and so have
	// the handlers and the servers' readers.
	for _, d := range all {
		close(d.queue)
	}
	s.writers.Wait()
}

// writeUp sends a message to the client. A failed write is the client
// gone: its input ends next, and with it the session.
func (s *session) writeUp(msg []byte) {
	if err := s.up.Write(msg); err != nil {
		s.warn.Warn(s.log, "client-write").Err(err).Msg("aggregate: writing to the client")
	}
}

// fromClient handles one line from the client. line is valid only during
// the call.
func (s *session) fromClient(line []byte) {
	var m wire.Message
	if err := wire.Parse(line, &m); err != nil {
		code := wire.CodeInvalidRequest
		if !wire.Valid(line) {
			code = wire.CodeParseError
		}
		s.writeUp(wire.ErrorResponse(nil, code, "aggregate: "+err.Error(), nil))
		return
	}
	switch m.Kind {
	case wire.KindResponse:
		s.clientResponse(&m)
	case wire.KindNotification:
		s.clientNotification(&m)
	case wire.KindRequest:
		// Its own copy of the line (the reader reuses its buffer), which
		// the parse's spans hold for: it is not parsed again.
		m.Raw = bytes.Clone(line)
		s.clientRequest(m)
	}
}

// A method handles one client request and returns its answer.
type method func(s *session, ctx context.Context, m *wire.Message) []byte

// handlers for the client's requests, by method.
var methods = map[string]method{
	"initialize":               (*session).initialize,
	"tools/list":               listHandler(kindTools),
	"prompts/list":             listHandler(kindPrompts),
	"resources/list":           listHandler(kindResources),
	"resources/templates/list": listHandler(kindTemplates),
	"tools/call":               namedHandler(kindTools),
	"prompts/get":              namedHandler(kindPrompts),
	"resources/read":           (*session).byURI,
	"resources/subscribe":      (*session).byURI,
	"resources/unsubscribe":    (*session).byURI,
	"completion/complete":      (*session).complete,
	"logging/setLevel":         (*session).setLevel,
}

func (s *session) clientRequest(m wire.Message) {
	id := m.IDBytes()
	if m.Method == "ping" {
		s.writeUp(wire.ResultResponse(id, []byte("{}")))
		return
	}
	h := methods[m.Method]
	switch {
	case h == nil:
		s.writeUp(wire.ErrorResponse(id, wire.CodeMethodNotFound, "aggregate: method not found: "+m.Method, nil))
		return
	case m.Method == "initialize" && s.initStarted.Swap(true):
		s.writeUp(wire.ErrorResponse(id, wire.CodeInvalidRequest, "aggregate: the session is already initialized", nil))
		return
	case m.Method != "initialize" && !s.initStarted.Load():
		s.writeUp(wire.ErrorResponse(id, wire.CodeInvalidRequest, "aggregate: the session is not initialized", nil))
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		s.writeUp(wire.ErrorResponse(id, wire.CodeInternalError, "aggregate: too many requests in flight", nil))
		return
	}
	key := string(id)
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	_, dup := s.inflight[key]
	if !dup {
		s.inflight[key] = cancel
	}
	s.mu.Unlock()
	if dup {
		cancel()
		<-s.sem
		s.writeUp(wire.ErrorResponse(id, wire.CodeInvalidRequest, "aggregate: a request with this id is in flight", nil))
		return
	}
	done := sync.OnceFunc(func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		cancel()
		<-s.sem
	})
	if m.Method == "initialize" {
		// Only one runs (initStarted). It writes its answer itself, and
		// the client may send its next request the moment it reads it: by
		// then the token must be back, or that request finds the bound
		// spent by a request that is over.
		s.initDone = done
	}
	if !s.handlers.Go(func() { s.handle(ctx, id, &m, h, done) }) {
		done() // shutdown has begun joining the handlers
	}
}

// handle runs the handler of one client request (on its own goroutine)
// and answers the client unless the request was cancelled.
func (s *session) handle(ctx context.Context, id []byte, m *wire.Message, h method, done func()) {
	defer done()
	if m.Method != "initialize" {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return
		}
	}
	hctx := ctx
	if m.Method == "initialize" {
		// "The initialize request MUST NOT be cancelled by clients"
		// (2025-11-25 cancellation): one that is anyway must not
		// leave the session half started.
		hctx = s.ctx
	}
	resp := s.bounded(id, h(s, hctx, m))
	// A request the client cancelled gets no answer: "Receivers of a
	// cancellation notification SHOULD ... Not send a response for
	// the cancelled request" (2025-11-25 cancellation).
	if resp != nil && ctx.Err() == nil {
		s.writeUp(resp)
	}
}

func (s *session) clientNotification(m *wire.Message) {
	switch m.Method {
	case "notifications/cancelled":
		s.mu.Lock()
		cancel := s.inflight[string(m.Bytes(m.RequestID))]
		s.mu.Unlock()
		if cancel != nil && m.RequestID.Present() {
			cancel()
		}
	case "notifications/progress":
		s.clientProgress(m)
	case "notifications/roots/list_changed":
		for _, d := range s.readyDownstreams() {
			d.post(bytes.Clone(m.Raw))
		}
	default:
		// notifications/initialized: each downstream had its own when it
		// answered initialize.
		s.log.Debug().Str("method", m.Method).Msg("aggregate: notification from the client not forwarded")
	}
}

// isReady reports whether initialize has been answered.
func (s *session) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// readyDownstreams returns the session's routable downstreams, or none
// before initialize has been answered.
func (s *session) readyDownstreams() []*downstream {
	if !s.isReady() {
		return nil
	}
	return s.downstreams()
}

// bounded returns resp, or an error for id when resp is over the message
// limit: the aggregate's own answer (a list merged from several servers,
// each under the limit) could otherwise be longer than the reader of the
// aggregate's output takes, which would drop it and leave the request
// unanswered.
func (s *session) bounded(id, resp []byte) []byte {
	limit := s.cfg.MaxMessageSize
	if limit <= 0 {
		limit = lineio.DefaultMaxLineSize
	}
	if len(resp) <= limit {
		return resp
	}
	s.warn.Warn(s.log, "answer-too-long").Int("bytes", len(resp)).Int("limit", limit).
		Msg("aggregate: an answer is over the message limit; the client gets an error instead")
	return wire.ErrorResponse(id, wire.CodeInternalError,
		fmt.Sprintf("aggregate: the answer is %d bytes, over the %d-byte message limit (--max-message-size)", len(resp), limit), nil)
}

func errorFor(m *wire.Message, code int, msg string) []byte {
	return wire.ErrorResponse(m.IDBytes(), code, msg, nil)
}
