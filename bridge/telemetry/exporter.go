package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// maxResponse bounds what the exporter reads of a collector's answer: it
// only needs the status, and a broken collector may send anything.
const maxResponse = 64 << 10

// httpExporter posts batches to an OTLP/HTTP collector. Only the batch
// processor's goroutine calls export, so its buffers are reused.
type httpExporter struct {
	cfg       exportConfig
	res       []pair
	version   string
	userAgent string
	client    *http.Client
	log       zerolog.Logger

	enc     otlpEncoding
	buf     []byte // the encoded batch, reused
	zbuf    bytes.Buffer
	zw      *gzip.Writer
	resp    bytes.Buffer // the collector's answer, at most maxResponse
	partLog ratelog.Limiter
}

// A StatusError is a collector's refusal of a batch with a status that
// retrying cannot fix (OTLP/HTTP: "If the processing of the request fails,
// the server MUST respond with appropriate HTTP 4xx or HTTP 5xx status
// code"; only 429, 502, 503 and 504 are retryable).
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("telemetry: the collector refused the spans: %d %s", e.Code, http.StatusText(e.Code))
}

func newExporter(cfg exportConfig, res []pair, version string, log zerolog.Logger) (*httpExporter, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.tls
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2, 2
	ua := "mcp-bridge"
	if version != "" {
		ua += "/" + version
	}
	e := &httpExporter{cfg: cfg, res: res, version: version, userAgent: ua, log: log, enc: encodingFor(cfg),
		// Redirects follow the outbound policy: a 307/308 on the
		// collector's own origin is followed; one elsewhere or off https
		// is refused, since following would resend the headers
		// (OTEL_EXPORTER_OTLP_HEADERS: API keys) and the spans there.
		client: outbound.Client(&http.Client{Transport: tr}),
	}
	if cfg.gzip {
		e.zw = gzip.NewWriter(io.Discard)
	}
	return e, nil
}

func (e *httpExporter) close() { e.client.CloseIdleConnections() }

// export encodes spans once and posts them, retrying what OTLP says is
// retryable — 429, 502, 503, 504 and failed connections — with
// exponential backoff or the collector's Retry-After ("the client SHOULD
// honor the waiting interval specified in the Retry-After header"), until
// OTEL_EXPORTER_OTLP_TIMEOUT or ctx (the processor's export timeout, or
// Shutdown's) ends.
func (e *httpExporter) export(ctx context.Context, spans []*spanRecord) error {
	body := e.encode(spans)
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = 250*time.Millisecond, 5*time.Second, 0
	for {
		code, retryAfter, err := e.post(ctx, body)
		switch {
		case err == nil && code/100 == 2:
			e.partial(len(spans))
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("telemetry: exporting %d spans: %w", len(spans), context.Cause(ctx))
		case err == nil && code != 429 && code != 502 && code != 503 && code != 504:
			return &StatusError{Code: code}
		case errors.Is(err, outbound.ErrRedirect):
			// Misconfigured, not down: retrying gets the same redirect.
			return fmt.Errorf("telemetry: exporting %d spans: %w", len(spans), err)
		}
		wait := bo.NextBackOff()
		if retryAfter > 0 {
			wait = retryAfter
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			if err == nil {
				err = &StatusError{Code: code}
			}
			return fmt.Errorf("telemetry: exporting %d spans: no time left to retry: %w", len(spans), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = &StatusError{Code: code}
			}
			return fmt.Errorf("telemetry: exporting %d spans: %w", len(spans), errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

func (e *httpExporter) encode(spans []*spanRecord) []byte {
	e.buf = e.enc.appendRequest(e.buf[:0], e.res, e.version, spans)
	if e.zw == nil {
		return e.buf
	}
	e.zbuf.Reset()
	e.zw.Reset(&e.zbuf)
	e.zw.Write(e.buf)
	e.zw.Close()
	return e.zbuf.Bytes()
}

// post sends body once; it returns the status, the Retry-After delay (0
// if none) or the transport's error.
func (e *httpExporter) post(ctx context.Context, body []byte) (int, time.Duration, error) {
	br := bytes.NewReader(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.url, br)
	if err != nil {
		return 0, 0, err
	}
	req.Body = postBody{br} // what bodyConn writes without a copy; Content-Length stays
	for _, h := range e.cfg.headers {
		req.Header.Set(h.key, h.value)
	}
	req.Header.Set("Content-Type", e.enc.contentType())
	if e.zw != nil {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Header.Set("User-Agent", e.userAgent)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Read (a bounded part of) the body: a success may carry a partial
	// success, and a drained body lets the connection be reused.
	e.resp.Reset()
	e.resp.ReadFrom(io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), time.Now()), nil
}

// partial warns when the collector's 2xx answer says it rejected some of
// the n spans (a partial success; retrying would not help).
func (e *httpExporter) partial(n int) {
	ps, err := e.enc.parseResponse(e.resp.Bytes())
	if err != nil || ps.rejected == 0 && ps.msg == "" {
		return
	}
	msg := ps.msg
	if len(msg) > 256 {
		msg = msg[:256] + "…"
	}
	e.partLog.Event(&e.log, zerolog.WarnLevel).Int64("rejected_spans", ps.rejected).Int("spans", n).Str("collector_message", msg).
		Msg("telemetry: the collector accepted the batch only in part")
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3). 0 means none or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
