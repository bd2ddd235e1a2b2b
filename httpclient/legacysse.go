package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// This file is the client side of the legacy HTTP+SSE transport
// (2024-11-05 transports §HTTP with SSE), behind the same Client methods
// as Streamable HTTP so that a caller sees a 2025 session remote:
//
//   - Post sends the message to the endpoint the stream announced and
//     returns a Response that yields, from the shared stream, the answers
//     to the requests in it and the progress notifications for them;
//   - ListenReady yields everything else on the stream (server requests,
//     notifications), like a standalone GET stream;
//   - the stream stands for the session: once it ends, requests in flight
//     fail with ErrSSEStreamLost (the transport has no resumption), and a
//     Post in the old session gets a 404, as a forgotten Streamable HTTP
//     session would, so that the caller replays its handshake; the Post of
//     a new session (no session id) opens a new stream.

// Transport names the HTTP transport a Client speaks.
type Transport string

const (
	// TransportAuto is Streamable HTTP, falling back to HTTP+SSE when a
	// POST without a session gets 400, 404 or 405 and a GET on the same URL
	// answers an SSE stream whose first event is endpoint.
	TransportAuto Transport = "auto"
	// TransportStreamableHTTP is Streamable HTTP only.
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE is the legacy HTTP+SSE transport only; Endpoint is the
	// SSE URL.
	TransportSSE Transport = "sse"
)

var (
	// ErrSSEStreamLost is the error of a request whose answer had not come
	// when the SSE stream ended: the transport cannot resume a stream, so
	// the answer is lost.
	ErrSSEStreamLost = errors.New("httpclient: the SSE stream ended before the answer came (the HTTP+SSE transport cannot resume)")

	// ErrSSEEndpoint reports an SSE stream that did not announce a usable
	// endpoint: no endpoint event first, or an empty or malformed URI.
	ErrSSEEndpoint = errors.New("httpclient: no usable endpoint event on the SSE stream")

	// ErrEndpointOrigin reports an endpoint event naming another origin
	// than the SSE stream's. Messages (and the configured headers, tokens
	// among them) go only where the user pointed the bridge: the outbound
	// policy that governs redirects governs the endpoint too.
	ErrEndpointOrigin = errors.New("httpclient: the SSE endpoint event names another origin")

	// ErrNoResume is returned by Resume on the HTTP+SSE transport.
	ErrNoResume = errors.New("httpclient: the HTTP+SSE transport cannot resume a stream")
)

// sseHint is the Hint of a 404/405 to a session's first POST when only
// Streamable HTTP is allowed.
const sseHint = "the server may speak the legacy HTTP+SSE transport (2024-11-05), which answers POSTs to its SSE URL this way: try --transport sse"

const (
	transportUndecided int32 = iota
	transportChoseStreamable
	transportChoseSSE
)

const (
	// endpointTimeout bounds the wait for the endpoint event, which
	// servers send at once.
	endpointTimeout = 30 * time.Second
	// unsolicitedQueue bounds the messages for ListenReady that wait for
	// it to attach (between a session's start and the caller's listen).
	unsolicitedQueue = 256
	// waiterQueue bounds the messages of one POST not yet read by its
	// caller; beyond it the stream's reader waits (back-pressure).
	waiterQueue = 16
)

// legacySSE is a Client's HTTP+SSE state.
type legacySSE struct {
	chose atomic.Int32 // transportUndecided, or what auto chose

	mu     sync.Mutex // serializes dialling, the probe and cur
	probed bool
	cur    *sseConn
	n      int // streams opened, for session ids
}

func (s *legacySSE) settle(v int32) { s.chose.CompareAndSwap(transportUndecided, v) }

// SpeaksSSE reports whether the Client speaks the HTTP+SSE transport:
// pinned, or chosen by the fallback.
func (c *Client) SpeaksSSE() bool { return c.usingSSE() }

func (c *Client) usingSSE() bool {
	return c.Transport == TransportSSE || c.sse.chose.Load() == transportChoseSSE
}

// afterStreamableError decides what a failed Streamable HTTP POST means.
// 2025-11-25 transports §Backward Compatibility: if the POST "fails with
// the following HTTP status codes "400 Bad Request", "404 Not Found" or
// "405 Method Not Allowed": Issue a GET request to the server URL,
// expecting that this will open an SSE stream and return an endpoint
// event as the first event." Only outside a session (inside, a 404 means
// the session is gone), and not when the body is a JSON-RPC answer of the
// server's own (a 2026-07-28 server answers an unknown method 404 so).
func (c *Client) afterStreamableError(ctx context.Context, body []byte, h http.Header, err error) (*Response, error) {
	var se *StatusError
	if !errors.As(err, &se) || c.SessionID() != "" || looksJSONRPC(se.Body) || c.sse.chose.Load() == transportChoseStreamable {
		return nil, err
	}
	switch se.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
	default:
		return nil, err
	}
	if c.Transport == TransportStreamableHTTP {
		if se.StatusCode != http.StatusBadRequest { // "Cannot POST /sse" and the like
			se.Hint = sseHint
		}
		return nil, err
	}
	if !c.fallBackToSSE(ctx) {
		return nil, err
	}
	return c.ssePost(ctx, body, h)
}

// looksJSONRPC reports a body that is a JSON-RPC message (a 2026-07-28
// server answers an unknown method with 404 and a JSON-RPC error).
func looksJSONRPC(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b) && bytes.Contains(b, []byte(`"jsonrpc"`))
}

// fallBackToSSE probes Endpoint with a GET, once, and switches the Client
// to HTTP+SSE if it answers an SSE stream announcing an endpoint. The
// stream it opened becomes the next session's.
func (c *Client) fallBackToSSE(ctx context.Context) bool {
	s := &c.sse
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.chose.Load() {
	case transportChoseSSE:
		return true
	case transportChoseStreamable:
		return false
	}
	if s.probed {
		return false
	}
	s.probed = true
	cn, err := c.dialSSE(ctx, 0)
	if err != nil {
		c.Logger.Debug().Err(err).Msg("httpclient: no HTTP+SSE stream at the URL either")
		return false
	}
	if !s.chose.CompareAndSwap(transportUndecided, transportChoseSSE) {
		cn.close() // a Streamable HTTP POST succeeded meanwhile
		return false
	}
	s.cur = cn
	c.Logger.Info().Str("url", safeURL(c.Endpoint)).
		Msg("the server refuses Streamable HTTP POSTs but offers an HTTP+SSE stream: using the legacy HTTP+SSE transport (2024-11-05)")
	return true
}

// sseSession returns the stream for a Post: the session's own (or a 404
// when it ended), or for a Post outside a session a stream that has not
// carried an initialize yet, opening one if needed.
func (c *Client) sseSession(ctx context.Context) (*sseConn, error) {
	s := &c.sse
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, cur := c.SessionID(), s.cur
	if sid != "" {
		if cur != nil && cur.id == sid && cur.alive() {
			return cur, nil
		}
		return nil, c.sessionGone(http.MethodPost)
	}
	if cur != nil && cur.alive() && !cur.wasInitialized() {
		c.SetSessionID(cur.id)
		return cur, nil
	}
	if cur != nil {
		cur.close()
		s.cur = nil
	}
	cn, err := c.dialSSE(ctx, c.maxRetries())
	if err != nil {
		return nil, err
	}
	s.cur = cn
	c.SetSessionID(cn.id)
	return cn, nil
}

// sessionGone is the 404 of a session whose stream ended (2025-11-25
// transports §Session Management: the client "MUST start a new session").
func (c *Client) sessionGone(method string) *StatusError {
	return &StatusError{Method: method, URL: safeURL(c.Endpoint), StatusCode: http.StatusNotFound,
		Header: http.Header{}, Body: []byte("the HTTP+SSE stream of this session ended")}
}

// live returns the current stream if it is session sid's and alive.
func (s *legacySSE) live(sid string) *sseConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.id == sid && s.cur.alive() {
		return s.cur
	}
	return nil
}

// sseTerminate closes the session's stream: the transport's way to end a
// session.
func (c *Client) sseTerminate() {
	s := &c.sse
	s.mu.Lock()
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	if cur != nil {
		cur.close()
		c.clearSessionID(cur.id)
	}
}

// Close closes what the Client holds open beyond single requests: the
// HTTP+SSE stream and its reader goroutine. Requests in flight on it fail.
func (c *Client) Close() error {
	c.sseTerminate()
	return nil
}

// ssePost is Post on the HTTP+SSE transport.
func (c *Client) ssePost(ctx context.Context, body []byte, h http.Header) (*Response, error) {
	cn, err := c.sseSession(ctx)
	if err != nil {
		return nil, err
	}
	return cn.post(ctx, body, h)
}

// sseListen is ListenReady on the HTTP+SSE transport: it relays the
// stream's unsolicited messages until the stream ends (a 404: the session
// is gone) or ctx does.
func (c *Client) sseListen(ctx context.Context, handle func([]byte), ready func(error)) error {
	cn := c.sse.live(c.SessionID())
	if cn == nil {
		err := c.sessionGone(http.MethodGet)
		if ready != nil {
			ready(err)
		}
		return err
	}
	if ready != nil {
		ready(nil)
	}
	for {
		select {
		case msg := <-cn.unsolicited:
			handle(msg)
		case <-cn.done:
			for {
				select {
				case msg := <-cn.unsolicited:
					handle(msg)
				default:
					return c.sessionGone(http.MethodGet)
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sseRequest builds a request of the transport: base, then c.Header, then
// h. No Mcp-Session-Id: the endpoint URI identifies the session.
func (c *Client) sseRequest(ctx context.Context, method, target string, body []byte, base, h http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range base {
		req.Header[k] = vs
	}
	overlay(req.Header, c.Header)
	overlay(req.Header, h)
	return req, nil
}

// dialSSE opens the SSE stream and reads its endpoint event, within ctx
// and endpointTimeout; the stream itself outlives ctx.
func (c *Client) dialSSE(ctx context.Context, retries int) (*sseConn, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	timer := time.AfterFunc(endpointTimeout, cancel)
	base := http.Header{"Accept": {mediaSSE}}
	hresp, err := c.do(sctx, http.MethodGet, func() (*http.Request, error) {
		return c.sseRequest(sctx, http.MethodGet, c.Endpoint, nil, base, nil)
	}, retries)
	var (
		r   *Response
		msg []byte
	)
	if err == nil {
		r, err = newResponse(sctx, cancel, http.MethodGet, hresp, c.maxEventSize(), true)
		if err == nil {
			msg, err = r.Next()
		}
	}
	live, fired := stop(), !timer.Stop()
	switch {
	case !live:
		err = ctx.Err()
	case fired:
		err = fmt.Errorf("%w: none within %v", ErrSSEEndpoint, endpointTimeout)
	case err != nil && r != nil:
		err = fmt.Errorf("%w: the stream ended before one: %w", ErrSSEEndpoint, err)
	case err == nil && r.evName != "endpoint":
		// 2024-11-05 transports §HTTP with SSE: "When a client connects,
		// the server MUST send an endpoint event containing a URI for the
		// client to use for sending messages."
		err = fmt.Errorf("%w: the first event is %q", ErrSSEEndpoint, excerpt([]byte(r.evName), 40))
	}
	var ep *url.URL
	if err == nil {
		ep, err = endpointURL(hresp.Request.URL, msg)
	}
	if err != nil {
		if r != nil {
			r.Close()
		}
		cancel()
		return nil, err
	}
	c.sse.n++
	cn := &sseConn{
		c:           c,
		id:          fmt.Sprintf("sse-%d", c.sse.n),
		endpoint:    ep.String(),
		stream:      r,
		ctx:         sctx,
		cancel:      cancel,
		done:        make(chan struct{}),
		unsolicited: make(chan []byte, unsolicitedQueue),
		waiters:     map[string]*sseWaiter{},
		tokens:      map[string]*sseWaiter{},
	}
	c.Logger.Debug().Str("endpoint", outbound.Redact(ep)).Msg("httpclient: HTTP+SSE stream open")
	go cn.read()
	return cn, nil
}

// endpointURL resolves the endpoint event's URI against the stream's URL
// and holds it to the stream's origin.
func endpointURL(base *url.URL, data []byte) (*url.URL, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil, fmt.Errorf("%w: the endpoint event is empty", ErrSSEEndpoint)
	}
	u, err := base.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSSEEndpoint, err)
	}
	if !outbound.SameOrigin(base, u) {
		return nil, fmt.Errorf("%w: %s is not on %s", ErrEndpointOrigin, outbound.Redact(u), outbound.Origin(base))
	}
	u.Fragment = ""
	return u, nil
}
