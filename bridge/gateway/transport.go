package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
)

// errStreamCut ends a response the Handler aborted (its budget cut a
// client that does not read), as a write deadline ends a socket's.
var errStreamCut = errors.New("gateway: in-process response cut by the server")

// handlerTransport is the RoundTripper of AggregateClient: each request is
// served by h (the Gateway) on a goroutine of life (the Gateway's), and
// the response's body is what the handler writes, as it writes it (an
// io.Pipe: an SSE stream reaches the client event by event, and a client
// that stops reading holds the handler's write as a socket would). There
// is no connection: nothing to dial, pool or close.
type handlerTransport struct {
	h    http.Handler
	life *lifecycle.Group
}

func (t *handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	sr := req.Clone(ctx)
	sr.RequestURI = req.URL.RequestURI()
	sr.RemoteAddr = "in-process"
	sr.Proto, sr.ProtoMajor, sr.ProtoMinor = "HTTP/1.1", 1, 1
	if sr.Host == "" {
		sr.Host = req.URL.Host
	}
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{hdr: http.Header{}, pw: pw, head: make(chan struct{})}
	if !t.life.Go(func() { serveInProcess(t.h, w, sr, cancel) }) {
		cancel()
		return nil, errorf("aggregate client after Close")
	}
	select {
	case <-w.head:
	case <-ctx.Done():
		// A handler that returns at once ends ctx (serveInProcess) just
		// after it wrote the head: both are ready, and the head wins.
		select {
		case <-w.head:
		default:
			pr.CloseWithError(ctx.Err())
			return nil, ctx.Err()
		}
	}
	resp := &http.Response{
		Status:     strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode: w.status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        w.sent,
		Body:          &pipeBody{PipeReader: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	return resp, nil
}

// serveInProcess serves one request of handlerTransport; its context
// ends with the handler, as net/http's does.
func serveInProcess(h http.Handler, w *pipeResponse, r *http.Request, cancel context.CancelFunc) {
	defer cancel()
	defer w.pw.Close()
	defer w.WriteHeader(http.StatusOK) // a handler that wrote nothing
	h.ServeHTTP(w, r)
}

// pipeBody is a response body: closing it tells the handler the client
// has gone (its context ends, its writes fail).
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// pipeResponse is the ResponseWriter of handlerTransport.
type pipeResponse struct {
	hdr    http.Header
	sent   http.Header // hdr as it was when the head was written
	status int
	pw     *io.PipeWriter
	head   chan struct{} // closed once status and sent are set
	cut    sync.Once
}

func (w *pipeResponse) Header() http.Header { return w.hdr }

func (w *pipeResponse) WriteHeader(code int) {
	if w.sent != nil {
		return
	}
	w.status, w.sent = code, w.hdr.Clone()
	close(w.head)
}

func (w *pipeResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is http.Flusher's: every write reaches the reader as it is made.
func (w *pipeResponse) Flush() {}

// SetWriteDeadline is how http.ResponseController aborts a write blocked
// on a client that does not read: a deadline past cuts the stream.
func (w *pipeResponse) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		w.cut.Do(func() { w.pw.CloseWithError(errStreamCut) })
	}
	return nil
}
