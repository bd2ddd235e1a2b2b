package httpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// retryInitialInterval is the first wait of the exponential retry policy.
const retryInitialInterval = 200 * time.Millisecond

// hintedBackOff is an exponential BackOff whose next interval a server hint
// (Retry-After) can override. backoff/v4 has no notion of Retry-After, so
// the retried operation records the hint here. It must sit inside
// backoff.WithContext: that helper only finds the context when it is the
// outermost wrapper.
type hintedBackOff struct {
	backoff.BackOff
	max     time.Duration // cap for any single wait, hint included
	hint    time.Duration
	hasHint bool
}

func (b *hintedBackOff) NextBackOff() time.Duration {
	d := b.BackOff.NextBackOff()
	if d == backoff.Stop {
		return d
	}
	if b.hasHint {
		d, b.hasHint = b.hint, false
	}
	return min(d, b.max)
}

func (b *hintedBackOff) Reset() {
	b.BackOff.Reset()
	b.hasHint = false
}

func (b *hintedBackOff) setHint(d time.Duration) { b.hint, b.hasHint = d, true }

// parseRetryAfter reads a Retry-After value, delta-seconds or an HTTP-date
// (RFC 9110 §10.2.3), relative to now. ok is false when v is absent or
// malformed; a date in the past gives 0.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil || s > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // absurdly large: the caller's cap applies
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

// maxRetryAfter only keeps Duration arithmetic from overflowing.
const maxRetryAfter = 24 * time.Hour

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isDialError reports whether err proves that the request never reached the
// server, so sending it again cannot execute it twice.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// isRetryableStatus reports the statuses after which a request may be sent
// again: the server says it did not process it.
func isRetryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// do sends the request that build creates and returns a 2xx response; any
// other status is a *StatusError, its body read while ctx still lives. It
// retries up to retries times when the request cannot have reached the
// server (a dial or DNS error) or the server answered 429/503. build is
// called once per attempt so that each attempt gets a fresh body. Anything
// else (a timeout or a reset after the request was written, any other
// status) is returned as is: a tools/call must never run twice. After the
// last attempt the last error is returned; if ctx ends first, ctx.Err().
func (c *Client) do(ctx context.Context, method string, build func() (*http.Request, error), retries int) (*http.Response, error) {
	wait := c.maxRetryWait()
	hb := &hintedBackOff{
		BackOff: backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(min(retryInitialInterval, wait)),
			backoff.WithMaxInterval(wait),
			backoff.WithMaxElapsedTime(0)),
		max: wait,
	}
	b := backoff.WithContext(backoff.WithMaxRetries(hb, uint64(max(0, retries))), ctx)
	hc := c.httpClient()

	// safeURL parses the endpoint: only errors and logs need it.
	op := func() (*http.Response, error) {
		req, err := build()
		if err != nil {
			return nil, backoff.Permanent(fmt.Errorf("httpclient: %s %s: %w", method, safeURL(c.Endpoint), err))
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, backoff.Permanent(ctx.Err())
			}
			// url.Error repeats the full URL, query included; keep only the cause.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			err = fmt.Errorf("httpclient: %s %s: %w", method, safeURL(c.Endpoint), err)
			if isDialError(err) {
				return nil, err
			}
			return nil, backoff.Permanent(err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			return resp, nil
		}
		se := newStatusError(method, safeURL(c.Endpoint), resp)
		if !isRetryableStatus(resp.StatusCode) {
			return nil, backoff.Permanent(se)
		}
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			hb.setHint(d)
		}
		return nil, se
	}
	notify := func(err error, d time.Duration) {
		ev := c.Logger.Debug().Str("method", method).Str("url", safeURL(c.Endpoint)).Dur("wait", d)
		var se *StatusError
		if errors.As(err, &se) {
			ev = ev.Int("status", se.StatusCode)
		} else {
			ev = ev.Err(err)
		}
		ev.Msg("httpclient: retrying request")
	}
	return backoff.RetryNotifyWithData(op, b, notify)
}
