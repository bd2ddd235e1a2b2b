package httpclient

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Listen's reconnect policy: exponential from 250ms up to 30s, forever.
const (
	listenInitialInterval = 250 * time.Millisecond
	listenMaxInterval     = 30 * time.Second
)

// openStream sends a GET for an SSE stream with Accept: text/event-stream,
// the session id, Last-Event-ID (if lastEventID is not empty), c.Header and h.
// 405 gives ErrNoStream, other non-2xx a *StatusError, a 2xx other than
// text/event-stream a *ContentTypeError.
func (c *Client) openStream(ctx context.Context, lastEventID string, h http.Header, retries int) (*Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	// 2025-11-25 transports §Listening for Messages from the Server: "The
	// client MUST include an Accept header, listing text/event-stream".
	base := http.Header{"Accept": {mediaSSE}}
	if lastEventID != "" {
		base.Set(headerLastEventID, lastEventID)
	}
	resp, err := c.do(ctx, http.MethodGet, func() (*http.Request, error) {
		return c.newRequest(ctx, http.MethodGet, nil, base, h)
	}, retries)
	if err != nil {
		cancel()
		var se *StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusMethodNotAllowed {
			return nil, ErrNoStream
		}
		return nil, err
	}
	r, err := newResponse(ctx, cancel, http.MethodGet, resp, c.maxEventSize(), true)
	if err != nil {
		return nil, err
	}
	r.lastID = lastEventID
	return r, nil
}

// Resume re-attaches to a broken SSE stream, for both 2025-11-25 polling
// (SEP-1699: the server closes the connection after a priming event and the
// client reconnects) and classic resumption after a network failure. It
// waits delay, or until ctx ends, then sends a GET with
// Accept: text/event-stream, Mcp-Session-Id, Last-Event-ID: lastEventID,
// c.Header and h, and returns the new stream as a [KindSSE] [*Response].
//
// 2025-11-25 transports §Resumability and Redelivery: "Resumption is always
// via HTTP GET with Last-Event-ID". Pass the previous Response's
// [Response.RetryDelay] as delay when it is not zero: the client "MUST
// respect the retry field".
//
// The connection attempt follows the retry policy of [Client.Post]. 405
// gives [ErrNoStream]; other statuses outside 2xx a *[StatusError].
func (c *Client) Resume(ctx context.Context, lastEventID string, delay time.Duration, h http.Header) (*Response, error) {
	if c.usingSSE() {
		return nil, ErrNoResume
	}
	if err := sleep(ctx, delay); err != nil {
		return nil, err
	}
	return c.openStream(ctx, lastEventID, h, c.maxRetries())
}

// sleep waits d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Listen runs the standalone GET stream of the legacy revisions, on which
// the server sends requests and notifications unrelated to any POST, until
// ctx ends. It sends Accept: text/event-stream, Mcp-Session-Id (read afresh
// for every connection), c.Header and h, and passes each message to handle
// on Listen's own goroutine. msg is valid only during the call.
//
// Listen returns:
//   - ctx.Err() when ctx ends, after closing the stream;
//   - [ErrNoStream] when the server answers 405 (it offers no GET stream,
//     which is allowed: 2025-11-25 transports §Listening for Messages from
//     the Server);
//   - a *[StatusError] for 404 (the session is gone; 2025-11-25 §Session
//     Management: the client "MUST start a new session"), 401, 403 and any
//     other 4xx except 408, 409, 425 and 429, which would fail again as is;
//   - a *[ContentTypeError] for a 2xx that is not text/event-stream.
//
// Everything else (network errors, 5xx, 408/409/425/429, a stream that ends
// or breaks) makes Listen reconnect, sending Last-Event-ID of the last event
// seen. Waits grow exponentially from 250ms to 30s and start over after a
// connection that delivered events; a Retry-After on 429/503 replaces one
// wait (capped by MaxRetryWait). Once the server has sent a retry field,
// Listen waits exactly that long after a connection that delivered events,
// and at least that long otherwise, so that a server that closes at once
// cannot make it spin.
func (c *Client) Listen(ctx context.Context, h http.Header, handle func(msg []byte)) error {
	return c.ListenReady(ctx, h, handle, nil)
}

// ListenReady is Listen, and calls ready once, after the first connection
// attempt: with nil when the stream is open, or with that attempt's error.
// A client that must not send further requests before the server can reach
// it on the stream waits for ready.
func (c *Client) ListenReady(ctx context.Context, h http.Header, handle func(msg []byte), ready func(error)) error {
	if c.usingSSE() {
		return c.sseListen(ctx, handle, ready)
	}
	bo := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(listenInitialInterval),
		backoff.WithMaxInterval(listenMaxInterval),
		backoff.WithMaxElapsedTime(0))
	var (
		lastID   string
		retry    time.Duration
		hasRetry bool
	)
	for {
		// Listen's own loop does the retrying, hence no retries inside.
		r, err := c.openStream(ctx, lastID, h, 0)
		if ready != nil {
			ready(err)
			ready = nil
		}
		var wait time.Duration
		if err == nil {
			serr := drain(r, handle)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lastID = r.LastEventID()
			if d, ok := r.retryState(); ok {
				retry, hasRetry = d, true
			}
			delivered := r.dispatchedEvents() > 0
			if delivered {
				bo.Reset()
			}
			switch {
			case hasRetry && delivered:
				wait = retry
			case hasRetry:
				wait = max(retry, bo.NextBackOff())
			default:
				wait = bo.NextBackOff()
			}
			c.Logger.Debug().Err(serr).Bool("delivered", delivered).Dur("wait", wait).Msg("httpclient: GET stream ended, reconnecting")
		} else {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if listenTerminal(err) {
				return err
			}
			wait = bo.NextBackOff()
			var se *StatusError
			if errors.As(err, &se) {
				if d, ok := parseRetryAfter(se.Header.Get("Retry-After"), time.Now()); ok {
					wait = min(d, c.maxRetryWait())
				}
			}
			if hasRetry {
				wait = max(wait, retry)
			}
			c.Logger.Debug().Err(err).Dur("wait", wait).Msg("httpclient: GET stream failed, reconnecting")
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// drain passes every message of r to handle and returns the error that ended
// the stream (io.EOF for a clean end).
func drain(r *Response, handle func([]byte)) error {
	defer r.Close()
	for {
		msg, err := r.Next()
		if err != nil {
			return err
		}
		handle(msg)
	}
}

// listenTerminal reports errors that reconnecting cannot cure.
func listenTerminal(err error) bool {
	if errors.Is(err, ErrNoStream) || errors.Is(err, ErrUnexpectedContentType) {
		return true
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return false // network trouble: try again
	}
	switch se.StatusCode {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return se.StatusCode >= 400 && se.StatusCode <= 499
}
