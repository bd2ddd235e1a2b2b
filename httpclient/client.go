package httpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// Header names and media types used on the wire.
const (
	headerSessionID   = "Mcp-Session-Id" // canonical form of MCP-Session-Id
	headerLastEventID = "Last-Event-ID"
	mediaJSON         = "application/json"
	mediaSSE          = "text/event-stream"
	acceptPost        = mediaJSON + ", " + mediaSSE
)

// Defaults applied when the corresponding Client field is zero.
const (
	defaultMaxRetries   = 4
	defaultMaxRetryWait = 10 * time.Second
	defaultMaxEventSize = 32 << 20

	// maxIdleConns caps the keep-alive pool. The pool only ever holds
	// connections that were in use at the same time, so it follows what
	// is in flight up to this ceiling; a cap below the calls in flight
	// (it was 64, and DefaultTransport's total is 100) makes every call
	// above it dial a connection and close it after one use, which halved
	// connect's throughput at 256 calls in flight (docs/benchmarks.md).
	maxIdleConns = 4096
	// idleConnTimeout closes what a burst left idle: an idle HTTP/1.1
	// connection holds two goroutines and two 4 KiB buffers.
	idleConnTimeout = 30 * time.Second
)

// A Client posts MCP messages to one Streamable HTTP endpoint and reads the
// replies as opaque byte slices. It is safe for concurrent use once its
// exported fields are set; they must not change afterwards, and a Client
// must not be copied after first use. The zero value of every field except
// Endpoint is usable.
type Client struct {
	// Endpoint is the full URL of the MCP endpoint.
	Endpoint string

	// HTTPClient sends the requests. If nil, the Client builds its own on
	// first use, on [NewTransport] and with no overall timeout, because SSE
	// streams and slow tool calls are long-lived; callers bound requests
	// with ctx. Either way redirects follow the bridge's outbound policy
	// (package outbound: same origin only, 307/308 for a POST), whatever
	// CheckRedirect HTTPClient has.
	HTTPClient *http.Client

	// Header holds static headers added to every request, such as
	// Authorization or user supplied headers. They replace the package's own
	// headers of the same name; per-call headers replace them in turn.
	Header http.Header

	// MaxRetries is the number of attempts after the first one for failures
	// that are safe to retry (see [Client.Post]). Zero means 4; a negative
	// value disables retries.
	MaxRetries int

	// MaxRetryWait caps any single wait between attempts, a server's
	// Retry-After included. Zero or negative means 10s.
	MaxRetryWait time.Duration

	// MaxEventSize is the largest SSE event block or JSON body accepted, in
	// bytes. Zero or negative means 32 MiB.
	MaxEventSize int

	// Logger receives debug logs about retries and reconnects. The zero
	// value discards them. Header values (tokens, session ids) are never
	// logged.
	Logger zerolog.Logger

	// Transport selects the HTTP transport: Streamable HTTP, the legacy
	// HTTP+SSE transport of 2024-11-05 (Endpoint is then the SSE URL), or,
	// for "" and [TransportAuto], Streamable HTTP with a fallback to SSE
	// (legacysse.go).
	Transport Transport

	sse legacySSE // the HTTP+SSE transport's state, when it is in use

	mu        sync.Mutex
	sessionID string

	defaultOnce sync.Once
	defaultHC   *http.Client
}

// SessionID returns the current session id, "" if none.
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SetSessionID sets the session id sent as Mcp-Session-Id on later requests;
// "" clears it.
func (c *Client) SetSessionID(id string) {
	c.mu.Lock()
	c.sessionID = id
	c.mu.Unlock()
}

// clearSessionID clears the session id if it is still id, so that a session
// established concurrently by another caller survives.
func (c *Client) clearSessionID(id string) {
	c.mu.Lock()
	if c.sessionID == id {
		c.sessionID = ""
	}
	c.mu.Unlock()
}

// CloseIdleConnections closes idle keep-alive connections of the Client's
// HTTP client. In-flight requests and open streams are not affected.
func (c *Client) CloseIdleConnections() {
	c.httpClient().CloseIdleConnections()
}

// httpClient is HTTPClient (or the Client's own) under the outbound
// policy: a copy sharing its Transport, so that a redirect never carries
// Header (tokens, -H values) or an MCP message to another origin.
func (c *Client) httpClient() *http.Client {
	c.defaultOnce.Do(func() {
		hc := c.HTTPClient
		if hc == nil {
			hc = &http.Client{Transport: NewTransport()}
		}
		c.defaultHC = outbound.Client(hc)
	})
	return c.defaultHC
}

// NewTransport returns the transport a Client uses when HTTPClient is nil:
// a clone of http.DefaultTransport (HTTP/2 when a TLS server offers it by
// ALPN, HTTP/1.1 otherwise) with keep-alive on and an idle pool as large
// as the calls in flight (up to 4096, closed after 30s idle). A caller
// that wraps the transport (an OAuth round tripper) should start from
// this one: DefaultTransport's pool of 64 idle connections per host makes
// every call above 64 in flight dial a connection and close it after one
// use, on both ends (docs/benchmarks.md).
func NewTransport() *http.Transport {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	t.IdleConnTimeout = idleConnTimeout
	t.DisableKeepAlives = false
	// h2 over TLS, negotiated by ALPN (h2c is not attempted: a
	// cleartext server would have to be known to speak it).
	t.ForceAttemptHTTP2 = true
	return t
}

func (c *Client) maxRetries() int {
	switch {
	case c.MaxRetries == 0:
		return defaultMaxRetries
	case c.MaxRetries < 0:
		return 0
	}
	return c.MaxRetries
}

func (c *Client) maxRetryWait() time.Duration {
	if c.MaxRetryWait <= 0 {
		return defaultMaxRetryWait
	}
	return c.MaxRetryWait
}

func (c *Client) maxEventSize() int {
	if c.MaxEventSize <= 0 {
		return defaultMaxEventSize
	}
	return c.MaxEventSize
}

// newRequest builds one attempt's request. Precedence, lowest first: own
// headers in base, the session id, c.Header, then h.
func (c *Client) newRequest(ctx context.Context, method string, body []byte, base, h http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body) // fresh per attempt; also lets net/http set GetBody
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Endpoint, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range base {
		req.Header[k] = slices.Clone(vs)
	}
	// 2025-11-25 transports §Session Management: clients "MUST include it in
	// the Mcp-Session-Id header on all of their subsequent HTTP requests".
	if sid := c.SessionID(); sid != "" {
		req.Header.Set(headerSessionID, sid)
	}
	overlay(req.Header, c.Header)
	overlay(req.Header, h)
	return req, nil
}

// overlay replaces dst's values for every key of src. Keys of src are
// canonicalised, so http.Header{"MCP-Protocol-Version": ...} works too.
func overlay(dst, src http.Header) {
	for k := range src {
		dst.Del(k)
	}
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// Post sends one JSON-RPC message. body is sent verbatim with
// Content-Type: application/json and
// Accept: application/json, text/event-stream (2025-11-25 transports
// §Sending Messages to the Server: the client "MUST include an Accept header,
// listing both"), plus Mcp-Session-Id if a session id is set, c.Header, and
// finally h (per-message headers such as MCP-Protocol-Version, Mcp-Method,
// Mcp-Name, Mcp-Param-*).
//
// A 2xx response carrying an Mcp-Session-Id header sets the Client's
// session id (ids with characters outside 0x21-0x7E are ignored: the spec
// forbids them and net/http would refuse to send them back).
//
// A status outside 2xx gives (nil, *[StatusError]). A 2xx gives a
// [*Response]: [KindAccepted] for 202 or an empty body, [KindJSON] or
// [KindSSE] by Content-Type (parameters and case are ignored); any other
// media type with a body gives a [*ContentTypeError]. ctx governs the whole
// exchange, including reading an SSE stream; the caller must Close the
// Response.
//
// Post retries (up to MaxRetries, waiting exponentially from 200ms, capped by
// MaxRetryWait) only when the request cannot have reached the server, i.e. a
// dial or DNS error, or on 429/503, where Retry-After overrides the wait.
// Anything else is not retried, because a tools/call must never run twice.
func (c *Client) Post(ctx context.Context, body []byte, h http.Header) (*Response, error) {
	if c.usingSSE() {
		return c.ssePost(ctx, body, h)
	}
	r, err := c.postStreamable(ctx, body, h)
	if err != nil {
		return c.afterStreamableError(ctx, body, h, err)
	}
	c.sse.settle(transportChoseStreamable)
	return r, nil
}

// postStreamable is Post for Streamable HTTP.
func (c *Client) postStreamable(ctx context.Context, body []byte, h http.Header) (*Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	base := http.Header{
		"Content-Type": {mediaJSON},
		"Accept":       {acceptPost},
	}
	resp, err := c.do(ctx, http.MethodPost, func() (*http.Request, error) {
		return c.newRequest(ctx, http.MethodPost, body, base, h)
	}, c.maxRetries())
	if err != nil {
		cancel()
		return nil, err
	}
	if sid := resp.Header.Get(headerSessionID); sid != "" {
		if validSessionID(sid) {
			c.SetSessionID(sid)
		} else {
			c.Logger.Warn().Int("len", len(sid)).Msg("httpclient: ignoring a session id with invalid characters")
		}
	}
	return newResponse(ctx, cancel, http.MethodPost, resp, c.maxEventSize(), false)
}

// validSessionID applies 2025-11-25 transports §Session Management: "The
// session ID MUST only contain visible ASCII characters (ranging from 0x21
// to 0x7E)."
func validSessionID(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Terminate ends the session with DELETE and Mcp-Session-Id (2025-11-25
// transports §Session Management: a client that no longer needs the session
// "SHOULD send an HTTP DELETE"). Without a session id it sends nothing and
// returns nil. 2xx, 404 (already gone) and 405 (the server does not allow
// clients to end sessions) give nil; other statuses a *[StatusError]. The
// session id is cleared in every case.
func (c *Client) Terminate(ctx context.Context, h http.Header) error {
	if c.usingSSE() {
		c.sseTerminate()
		return nil
	}
	sid := c.SessionID()
	if sid == "" {
		return nil
	}
	defer c.clearSessionID(sid)
	resp, err := c.do(ctx, http.MethodDelete, func() (*http.Request, error) {
		return c.newRequest(ctx, http.MethodDelete, nil, nil, h)
	}, c.maxRetries())
	var se *StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed) {
		return nil
	}
	if err != nil {
		return err
	}
	discard(resp.Body)
	return nil
}
