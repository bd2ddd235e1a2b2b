package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A Handler forgets an in-process session as it does an HTTP client's:
// its own child exited, or it was evicted. An HTTP client then "MUST
// start a new session by sending a new InitializeRequest without a
// session ID attached" (2025-11-25 transports §Session management);
// the Conn's client (the aggregate) cannot be asked to, so the Conn does
// it, replaying the client's own handshake, as connect does for a stdio
// host. Its client sees the server go on (its requests in flight when
// the session ended got an error).

// renewEvery bounds how often a Conn renews its session: a child that
// exits at once must not make it start one child after another.
const renewEvery = time.Second

// idempotent are the requests sent again on the renewed session when the
// old one was gone before they reached it; anything else might have had
// an effect at the old child, and its client decides.
var idempotent = map[string]bool{
	"ping": true, "tools/list": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"completion/complete": true,
}

// renewal serializes a Conn's renewals: every goroutine that finds the
// same session gone shares one.
type renewal struct {
	mu   sync.Mutex
	last time.Time
}

// renewed renews session stale after a POST of m found it gone, and
// serves m again on the new one if that is safe. It returns the writer of
// the answer to hand on, or nil when the answer was handed on already or
// there is none (no new session: the Conn has ended).
func (c *Conn) renewed(m *wire.Message, stale string) *entryWriter {
	sid, ok := c.renewAfter(stale)
	switch {
	case !ok:
		c.end()
		return nil
	case m.Kind == wire.KindRequest && !idempotent[m.Method]:
		c.deliver(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError,
			"mcp-bridge: the server's session had ended (its process exited?); a new one was started, but this "+m.Method+
				" was not sent again because it may not be idempotent: retry it if that is safe", nil), nil, nil)
		return nil
	}
	return c.postOnce(m, sid, false)
}

// renewAfter returns the session that replaces stale: the current one if
// another goroutine renewed it already, else a new one, initialized with
// the client's handshake. ok is false when there is none: the Conn is
// closed, the Handler is shutting down or refuses new sessions, or the
// new session's initialize failed.
func (c *Conn) renewAfter(stale string) (sid string, ok bool) {
	c.renew.mu.Lock()
	defer c.renew.mu.Unlock()
	c.mu.Lock()
	cur, init, inited := c.sid, c.init, c.inited
	c.mu.Unlock()
	if cur != stale {
		return cur, cur != ""
	}
	if wait := renewEvery - time.Since(c.renew.last); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.closed:
		}
	}
	c.renew.last = time.Now()
	var m wire.Message
	if c.isClosed() || c.h.refusing.Fired() || wire.Parse(init, &m) != nil {
		return "", false
	}
	w := c.postOnce(&m, "", true)
	sid = first(w.hdr[keySessionID])
	if sid == "" || w.status >= 300 {
		c.h.log.Warn().Int("status", w.status).Msg("in-process session ended and could not be renewed")
		return "", false
	}
	var n wire.Message
	if inited != nil && wire.Parse(inited, &n) == nil {
		c.postOnce(&n, sid, true)
	}
	c.mu.Lock()
	closed := c.isClosed() // Close takes c.sid under c.mu after it closes c.closed
	if !closed {
		c.sid = sid
	}
	c.mu.Unlock()
	if closed {
		c.delete(sid) // Close came first and could not name it
		return "", false
	}
	c.h.log.Info().Msg("in-process session ended by the server; a new one replaced it")
	return sid, true
}

// maxRetries and maxRetryWait bound retries of a request the Handler
// refused for now (429, 503: not ready yet, too many requests in flight),
// as an HTTP client of it retries (connect: httpclient's defaults).
const (
	maxRetries   = 4
	maxRetryWait = 10 * time.Second
)

// retry waits as the refusal w asks (Retry-After, else a second) and
// reports whether to send the request again: a refusal for now, unless
// the Handler is shutting down (that one lasts), the Conn is closing, or
// try retries were made already.
func (c *Conn) retry(w *entryWriter, try int) bool {
	if (w.status != http.StatusServiceUnavailable && w.status != http.StatusTooManyRequests) ||
		try >= maxRetries || c.h.refusing.Fired() {
		return false
	}
	wait := time.Second
	if n, err := strconv.Atoi(w.hdr.Get("Retry-After")); err == nil && n >= 0 {
		wait = min(time.Duration(n)*time.Second, maxRetryWait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true // its refusal is not handed on
	case <-c.closed:
		return false
	}
}

// isClosed reports whether Close has begun.
func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}
