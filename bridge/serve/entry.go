package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The in-process entry: a 2025 session of the Handler opened from inside
// the process (Open), message by message, for a caller some other front
// has verified already. bridge/gateway's aggregated endpoint reaches each
// route this way: no HTTP encoding, no socket or pipe, no credential of
// its own, and each message it sends parsed once (here) on its way to the
// child, each the child sends parsed once (by the child's reader, which
// hands its parse on through Recv) on its way back.
//
// A message goes to the same session machinery as an HTTP request's once
// its body is read and parsed (sessionTable.servePost, serveGet,
// serveDelete), under the caller's Principal, through the same access log
// and metrics (observed), the same limits (admit, refused) and the same
// translation when the child speaks only 2026-07-28. What the session
// sends back on its streams goes to the Conn message by message
// (entryWriter.pump), charged to the same budgets while its reader is
// behind; what it answers as an HTTP response body (a refusal, an answer
// of its own) is handed on whole.

// ErrCallerRefused is returned by Open for a caller the Handler would not
// admit with an HTTP request either.
var ErrCallerRefused = errors.New("serve: the caller is not admitted")

// errConnClosed is returned by a Conn's Send after Close, or after its
// session ended.
var errConnClosed = errors.New("serve: the in-process session has ended")

// A Caller is whom an in-process session acts for, as the front that
// opens it verified: a static token's holder (Authorization, checked
// against this Handler's own tokens as a request's would be), or an OAuth
// principal with its granted scopes (admitted by Config.Auth when it is a
// CallerAuthorizer, which checks the scopes this endpoint requires).
type Caller struct {
	// Authorization is the caller's own Authorization header, when it
	// authenticated with a static token.
	Authorization string
	// Subject is the principal an OAuth Authenticator gave the caller;
	// Scopes are the scopes its token was granted.
	Subject string
	Scopes  []string
}

// A CallerAuthorizer is an Authenticator that can also admit an OAuth
// caller another front verified (Open): it refuses one whose scopes do
// not cover what its endpoint requires. Without it Open refuses every
// OAuth caller: scopes unchecked are scopes bypassed.
type CallerAuthorizer interface {
	AuthorizeCaller(subject string, scopes []string) error
}

// observed serves r with next as ServeHTTP serves a request: through the
// access log and metrics when they are on.
func (h *Handler) observed(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if h.obs.On() {
		h.obs.Serve(w, r, next)
		return
	}
	next(w, r)
}

// admitCaller returns the Principal c acts for at this Handler, or an
// error when an HTTP request of c would have been refused.
func (h *Handler) admitCaller(c Caller) (auth.Principal, error) {
	g := h.guard
	if !g.Required() {
		return auth.Principal{}, nil
	}
	if c.Authorization != "" {
		if p, ok := g.Match(c.Authorization); ok {
			return p, nil
		}
	}
	if c.Subject == "" || h.cfg.Auth == nil {
		return auth.Principal{}, ErrCallerRefused
	}
	az, ok := h.cfg.Auth.(CallerAuthorizer)
	if !ok {
		return auth.Principal{}, fmt.Errorf("%w: this endpoint cannot check an OAuth caller's scopes", ErrCallerRefused)
	}
	if err := az.AuthorizeCaller(c.Subject, c.Scopes); err != nil {
		return auth.Principal{}, fmt.Errorf("%w: %w", ErrCallerRefused, err)
	}
	return auth.OAuthPrincipal(c.Subject), nil
}

// maxEntryQueue bounds the messages a Conn holds for its reader: past it
// the session's streams wait, as for an HTTP client that reads slowly,
// and the Handler's budgets apply.
const maxEntryQueue = 64

// A Conn is one in-process 2025 session (Open). Send and Recv carry one
// JSON-RPC message each, without a newline; Close ends the session.
type Conn struct {
	h     *Handler
	p     auth.Principal
	url   *url.URL
	track func() func() // nil: untracked

	ctx    context.Context // ends with Close: every request's context
	cancel context.CancelFunc
	out    chan entryMsg // to Recv
	gone   chan struct{} // closed when the session has ended (Recv drains, then io.EOF)
	closed chan struct{} // closed by Close: writers stop waiting for Recv
	ready  chan struct{} // closed when initialize has been answered
	wg     sync.WaitGroup
	stop   func() bool // stops Open's AfterFunc

	renew renewal // a new session when the Handler forgets this one (entry_renew.go)

	omu  sync.Mutex
	outs map[*stream.Sink]*entryWriter // the streams being pumped to Recv (entryWriter.pump)

	mu        sync.Mutex
	sid       string // Mcp-Session-Id; "" until initialize succeeds
	initSent  bool
	init      []byte // the client's initialize and notifications/initialized,
	inited    []byte // replayed by a renewal
	goneOnce  sync.Once
	closeOnce sync.Once
}

// Open starts an in-process session for c: the first message sent must
// be initialize, as on HTTP. ctx bounds the session: when it ends, the
// session ends as by Close. track, if not nil, brackets the serving of
// each message and of the session's standalone stream, as an HTTP
// server's handler call is bracketed (the gateway lets a retired route
// finish them); it returns the func that ends the bracket.
func (h *Handler) Open(ctx context.Context, c Caller, track func() (done func())) (*Conn, error) {
	p, err := h.admitCaller(c)
	if err != nil {
		return nil, err
	}
	if h.refusing.Fired() {
		return nil, fmt.Errorf("%w: mcp-bridge is shutting down", errConnClosed)
	}
	cctx, cancel := context.WithCancel(ctx)
	conn := &Conn{
		h: h, p: p, url: &url.URL{Path: h.cfg.path()}, track: track,
		ctx: cctx, cancel: cancel,
		out:    make(chan entryMsg, maxEntryQueue),
		gone:   make(chan struct{}),
		closed: make(chan struct{}),
		ready:  make(chan struct{}),
		outs:   map[*stream.Sink]*entryWriter{},
	}
	// A context that ends first ends the session as Close would.
	conn.stop = context.AfterFunc(ctx, func() { conn.Close() })
	return conn, nil
}

// Send hands one message of the client to the session. A request is
// answered through Recv; Send does not wait for it.
func (c *Conn) Send(msg []byte) error {
	var m wire.Message
	if err := wire.Parse(msg, &m); err != nil {
		return fmt.Errorf("serve: in-process message: %w", err)
	}
	if m.Kind == wire.KindRequest && !validID(m.IDBytes()) {
		return fmt.Errorf("serve: in-process message: id must be a string or an integer")
	}
	if m.Kind == wire.KindRequest && m.Method == "initialize" {
		c.mu.Lock()
		again := c.initSent
		if !again {
			c.initSent = true
			c.init = slices.Clone(msg)
		}
		c.mu.Unlock()
		if again {
			return fmt.Errorf("serve: in-process session: initialize sent twice")
		}
		return c.spawn(func() {
			defer close(c.ready)
			c.post(&m, "")
		})
	}
	c.mu.Lock()
	began := c.initSent
	c.mu.Unlock()
	if !began {
		// Nothing would ever make the session ready: an HTTP client gets
		// 400 for this, and the Conn's client an error, not a wait.
		return fmt.Errorf("serve: in-process session: %s before initialize", m.Method)
	}
	select {
	case <-c.ready:
	case <-c.closed:
		return errConnClosed
	}
	c.mu.Lock()
	sid := c.sid
	if m.Method == "notifications/initialized" {
		c.inited = slices.Clone(msg)
	}
	c.mu.Unlock()
	if sid == "" {
		return errConnClosed // initialize failed
	}
	if m.Kind == wire.KindRequest {
		// Answered when the child answers: on its own goroutine, as a
		// client's POST is.
		return c.spawn(func() { c.post(&m, sid) })
	}
	c.post(&m, sid) // a notification or an answer: accepted at once
	return nil
}

// spawn runs fn on a goroutine Close joins, unless Close has begun.
func (c *Conn) spawn(fn func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return errConnClosed
	default:
	}
	c.wg.Go(fn)
	return nil
}

// Recv sets m to the next message of the session, parsed (m.Raw is its
// bytes, the caller's from now on): a message of the child comes with the
// parse its reader made, re-based past the session's edits of its ids; one
// the session made itself is parsed here. It returns io.EOF once the
// session has ended and everything before the end was read.
func (c *Conn) Recv(m *wire.Message) error {
	for {
		e, err := c.next()
		if err != nil {
			return err
		}
		if e.m != nil {
			*m = *e.m
			return nil
		}
		if err := wire.Parse(e.raw, m); err == nil {
			return nil
		}
		c.h.log.Debug().Int("bytes", len(e.raw)).Msg("in-process session: an unparsable message of the session dropped")
	}
}

// next returns the next message for Recv.
func (c *Conn) next() (entryMsg, error) {
	select {
	case e := <-c.out:
		return e, nil
	default:
	}
	select {
	case e := <-c.out:
		return e, nil
	case <-c.gone:
		select {
		case e := <-c.out:
			return e, nil
		default:
			return entryMsg{}, io.EOF
		}
	case <-c.closed:
		return entryMsg{}, io.EOF
	}
}

// Close ends the session (as a client's DELETE does: every request still
// pending is answered with an error and cancelled at the child) and joins
// the Conn's goroutines.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		sid := c.sid
		close(c.closed) // under mu: spawn starts nothing from now on
		c.mu.Unlock()
		c.stop()
		if sid != "" {
			c.delete(sid)
		}
		c.cancel()
		c.end()
		c.wg.Wait()
	})
	return nil
}

// end marks the session ended for Recv.
func (c *Conn) end() { c.goneOnce.Do(func() { close(c.gone) }) }

// request is the in-process stand-in for an HTTP request of the session.
func (c *Conn) request(ctx context.Context, method, sid string) *http.Request {
	r := (&http.Request{
		Method: method, URL: c.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: "localhost", RemoteAddr: "in-process", RequestURI: c.url.Path,
	}).WithContext(ctx)
	if sid != "" {
		r.Header[keySessionID] = []string{sid}
	}
	return r
}

// post serves one message as a POST of the session would be served.
func (c *Conn) post(m *wire.Message, sid string) {
	w := c.postOnce(m, sid, false)
	for try := 0; m.Kind == wire.KindRequest && c.retry(w, try); try++ {
		w = c.postOnce(m, sid, false)
	}
	if sid != "" && w.status == http.StatusNotFound {
		// The Handler forgot the session: a new one, and this message
		// again if that is safe (entry_renew.go).
		if w = c.renewed(m, sid); w == nil {
			return
		}
	}
	if m.Kind == wire.KindRequest {
		w.finish()
	}
	if sid == "" {
		// initialize: the session is the one its answer named.
		if id := first(w.hdr[keySessionID]); id != "" && w.status < 300 {
			c.mu.Lock()
			c.sid = id
			closed := c.spawnLocked(c.listen)
			c.mu.Unlock()
			if closed {
				c.delete(id) // Close came first and could not name it
			}
		}
		return
	}
}

// postOnce serves m as one POST of session sid; drop: what it answers is
// not handed on (a renewal's replayed handshake).
func (c *Conn) postOnce(m *wire.Message, sid string, drop bool) *entryWriter {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel() // as net/http does when a handler returns: the session's attachment ends
	w := newEntryWriter(c)
	w.drop = drop
	r := c.request(context.WithValue(ctx, entryKey{}, w), http.MethodPost, sid)
	r.ContentLength = int64(len(m.Raw))
	c.serve(w, r, func(w http.ResponseWriter, r *http.Request) { c.servePost(w, r, m) })
	return w
}

// serve serves r with next, inside track's bracket.
func (c *Conn) serve(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if c.track != nil {
		defer c.track()()
	}
	c.h.observed(w, r, next)
}

// delete ends the session as a client's DELETE does.
func (c *Conn) delete(sid string) {
	r := c.request(context.Background(), http.MethodDelete, sid)
	c.serve(newEntryWriter(c), r, c.serveDelete)
}

// spawnLocked is spawn with c.mu held; it reports whether Close has begun.
func (c *Conn) spawnLocked(fn func()) bool {
	select {
	case <-c.closed:
		return true
	default:
	}
	c.wg.Go(fn)
	return false
}

// servePost is what Handler.servePost does once the body is parsed.
func (c *Conn) servePost(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	h := c.h
	r = c.admitted(r)
	if h.refused(w, r) {
		return
	}
	m = h.obs.Message(obsOf(w), r, m)
	if m.Kind == wire.KindRequest && !h.admit(w, m.IDBytes()) {
		return
	}
	h.sessions.servePost(w, r, opOf(w).Relayed(m))
}

// listen carries the session's standalone stream (what the child sends
// outside any request) for as long as the session lives: a stream the
// Handler ends while the session goes on (its budget cut it) is opened
// again, as a client reconnects. Once the Handler is shutting down
// (BeginShutdown ends standalone streams) the session goes on without
// one until it ends, so that its requests in flight are answered, as an
// HTTP client's are.
func (c *Conn) listen() {
	defer c.end()
	c.mu.Lock()
	sid := c.sid
	c.mu.Unlock()
	for c.ctx.Err() == nil {
		w := newEntryWriter(c)
		r := c.request(context.WithValue(c.ctx, entryKey{}, w), http.MethodGet, sid)
		r.Header["Accept"] = []string{"text/event-stream"}
		c.serve(w, r, c.serveGet)
		s := c.h.sessions.lookup(sid)
		switch {
		case s == nil:
			// Ended: by Close or the Handler's (nothing to renew), or
			// by its child's exit (a new session, entry_renew.go).
			nsid, ok := c.renewAfter(sid)
			if !ok {
				return
			}
			sid = nsid
			continue
		case c.h.closing.Fired() || w.status != http.StatusOK:
			// No standalone stream for now (the Handler is shutting
			// down, or refused this one): the session goes on without
			// one until it ends, so that its requests in flight are
			// answered; ending the Conn here would fail them.
			select {
			case <-s.endCh:
			case <-c.closed:
			}
			return
		}
	}
}

func (c *Conn) serveGet(w http.ResponseWriter, r *http.Request) {
	r = c.admitted(r)
	if c.h.refused(w, r) {
		return
	}
	c.h.sessions.serveGet(w, r)
}

func (c *Conn) serveDelete(w http.ResponseWriter, r *http.Request) {
	c.h.sessions.serveDelete(w, c.admitted(r))
}

// admitted is r as the guard passes an admitted request on: carrying the
// caller's Principal (sessions are bound to it; the access log and
// metrics name it).
func (c *Conn) admitted(r *http.Request) *http.Request { return auth.WithPrincipal(r, c.p) }

// deliver hands one message to Recv, with its parse if it has one,
// waiting while the reader is behind (or until Close, or the stream is
// aborted: the budget cut it).
func (c *Conn) deliver(msg []byte, m *wire.Message, abort <-chan struct{}) error {
	select {
	case c.out <- entryMsg{msg, m}:
		return nil
	case <-c.closed:
		return errConnClosed
	case <-abort:
		return errConnClosed
	}
}
