package stream

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A 2026-07-28 call's SSE stream is detached from net/http once it has
// nothing to write and starts to wait (for progress, the result, or a
// keepalive tick): its connection is hijacked, the handler returns, and the
// rest of the chunked body is written by the bridge itself — by writers
// (writers.go) for a stream that waits by events and holds no goroutine
// (evstream.go: a 2026-07-28 call), or for a goroutine of the stream's own
// that waits in a select (a stream that also ends on a channel). The
// client going away is seen by one epoll set for all streams
// (hangup_linux.go), elsewhere by a goroutine per stream reading its
// connection. A call that asked for progress (a long one, by its
// client's account) detaches at its first wait, before its response is
// decided: the stream then writes the response head itself, SSE or JSON.
//
// Why: a stream that waits inside its handler holds net/http's whole
// per-connection kit — the connection goroutine's stack, grown to 8 KiB by
// request parsing and the handler frames above it; the background-read
// goroutine; a 4 KiB read and a 4 KiB write buffer for the connection and a
// 2 KiB one for the response; the parsed request — about 26 KiB of live
// memory a stream, measured with 10,000 streams (docs/benchmarks.md). A
// detached stream served by events holds its connection, its sink and a
// few small structs: about 1.6 KiB.
//
// The price: an SSE response that may detach, and any detached response,
// says "Connection: close", so the client opens a new connection for its
// next request (other responses keep their connections as before). Only
// HTTP/1.1 connections that can be hijacked detach; HTTP/2, HTTP/1.0 and
// wrapped writers that hide the hijacker keep the stream in its handler as
// before.

// canDetach reports whether the response to req can be detached: HTTP/1.1
// (chunked bodies) over a connection that net/http lets us hijack.
func canDetach(w http.ResponseWriter, req *http.Request) bool {
	if req.ProtoMajor != 1 || req.ProtoMinor < 1 {
		return false
	}
	for {
		switch v := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return false
		}
	}
}

// A rawStream is the connection of a detached stream: the rest of an HTTP/1.1
// chunked response body, one chunk per flush as net/http would write it.
type rawStream struct {
	c      net.Conn
	cancel context.CancelFunc // the stream's context: the client went away
	token  uint64             // its name in the hangup watcher (0: it reads for itself)
	// obs finishes the request's observation when the stream ends (nil
	// without telemetry or access log) with out, the bytes the stream
	// wrote; its own response head sets its status.
	obs Observer
	out int64
	rb  [1]byte  // the reader's buffer
	hdr [24]byte // a chunk header
	// chunks: the body is chunked (an SSE stream). Beside rb and hdr it
	// fills their padding: the struct stays in the 144-byte size class.
	chunks bool
	// writers do the stream's writes; job is the one step it waits for.
	writers *writers
	job     writeJob
}

var crlf = []byte("\r\n")

// head writes the status line and h, which it completes as net/http would
// (Date; Content-Length for a body, else chunked transfer coding), and
// body if there is one.
func (rs *rawStream) head(status int, h http.Header, body []byte) error {
	b := make([]byte, 0, 512+len(body))
	b = append(strconv.AppendInt(append(b, "HTTP/1.1 "...), int64(status), 10), ' ')
	b = append(append(b, http.StatusText(status)...), crlf...)
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if body != nil {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	} else {
		h.Set("Transfer-Encoding", "chunked")
		rs.chunks = true
	}
	buf := bytes.NewBuffer(b)
	if err := h.Write(buf); err != nil {
		return err
	}
	buf.Write(crlf)
	buf.Write(body)
	n, err := rs.c.Write(buf.Bytes())
	if rs.obs != nil {
		rs.obs.Head(status)
	}
	rs.wrote(int64(n))
	return err
}

// wrote adds n bytes to what the request's observation reports sent.
func (rs *rawStream) wrote(n int64) { rs.out += n }

// Send writes parts as one chunk.
func (rs *rawStream) send(parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return nil // a zero-length chunk would end the body
	}
	hdr := append(strconv.AppendInt(rs.hdr[:0], int64(n), 16), crlf...)
	if n > 32<<10 {
		// A large message goes out from its own slice (writev).
		bufs := make(net.Buffers, 0, len(parts)+2)
		bufs = append(append(append(bufs, hdr), parts...), crlf)
		n, err := bufs.WriteTo(rs.c)
		rs.wrote(n)
		return err
	}
	// A small one is copied into a pooled buffer and written at once: a
	// plain write needs less of the goroutine's stack than writev, and
	// the buffer is not held while the stream waits.
	bp := chunkPool.Get().(*[]byte)
	b := append((*bp)[:0], hdr...)
	for _, p := range parts {
		b = append(b, p...)
	}
	b = append(b, crlf...)
	n, err := rs.c.Write(b)
	rs.wrote(int64(n))
	*bp = b
	chunkPool.Put(bp)
	return err
}

// chunkPool holds the buffers small chunks are assembled in.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// lingerTimeout bounds how long a finished stream waits for its client to
// close the connection.
const lingerTimeout = 5 * time.Second

// end finishes the response and closes the connection. After a complete
// body the client, told "Connection: close", closes first (ctx ends): the
// server then keeps no TIME_WAIT socket for the connection, which on a busy
// host stalls new connections from the same client port. A client that
// keeps the connection open is cut after lingerTimeout. The body's last
// chunk is written by a writer (rsp.run), as every write of the stream.
func (rs *rawStream) end(ctx context.Context, rsp *Responder, complete bool) {
	if complete {
		if _, more := rsp.run(nil, opEnd); more {
			t := time.NewTimer(lingerTimeout)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	rs.close()
}

// close closes the connection and ends the stream's context.
func (rs *rawStream) close() {
	rs.c.Close()
	rs.cancel()
}

// finishBody writes the end of a chunked body and bounds how long the
// client may take to close.
func (rs *rawStream) finishBody() error {
	_ = rs.c.SetWriteDeadline(time.Now().Add(lingerTimeout))
	if !rs.chunks {
		return nil
	}
	n, err := rs.c.Write(lastChunk)
	rs.wrote(int64(n))
	return err
}

var lastChunk = []byte("0\r\n\r\n")

// read consumes whatever the client sends (nothing, after a request with
// Connection: close) until the connection ends, then cancels the stream.
func (rs *rawStream) read() {
	defer rs.cancel()
	for {
		if _, err := rs.c.Read(rs.rb[:]); err != nil {
			return
		}
	}
}

// detachedStreams are the Engine's detached streams: Close ends them,
// Wait waits for them.
type detachedStreams struct {
	mu      sync.Mutex
	m       map[*rawStream]*Responder
	closed  bool          // Close ran: nothing detaches any more
	total   atomic.Int64  // streams ever detached
	empty   chan struct{} // closed when m becomes empty (made by a waiter)
	wg      sync.WaitGroup
	hang    hangups // tells streams that their clients went away
	writers writers // write for the streams (writers.go)
}

func (d *detachedStreams) remove(rs *rawStream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, rs)
	if len(d.m) == 0 && d.empty != nil {
		close(d.empty)
		d.empty = nil
	}
}

// count returns how many streams are detached.
func (d *detachedStreams) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

// wait returns once no stream is detached, or with ctx's error.
func (d *detachedStreams) wait(ctx context.Context) error {
	d.mu.Lock()
	if len(d.m) == 0 {
		d.mu.Unlock()
		return nil
	}
	if d.empty == nil {
		d.empty = make(chan struct{})
	}
	ch := d.empty
	d.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends every detached stream as closing its connection would (the
// write in progress fails, the stream's context ends) and waits for their
// goroutines.
func (d *detachedStreams) close() {
	d.mu.Lock()
	d.closed = true
	var all []*rawStream
	for rs, r := range d.m {
		all = append(all, rs)
		r.abort()
	}
	d.mu.Unlock()
	for _, rs := range all {
		rs.cancel()
	}
	d.hang.close() // its goroutine is counted in wg too
	d.wg.Wait()
	d.writers.close()
}

// PumpDetachable pumps sk into rsp and then calls done with the result — in
// the handler, or, if the stream detaches (Responder.MayDetach), after the
// handler has returned: on a writer for a stream served by events
// (evstream.go), else on the stream's own goroutine. done must not touch
// the request or the ResponseWriter.
func (en *Engine) PumpDetachable(req *http.Request, rsp *Responder, sk *Sink, stop, stop2 <-chan struct{}, done func(PumpResult)) {
	res := pump(req.Context(), rsp, sk, en.ka, stop, stop2)
	if res == pumpDetach {
		if ctx, rs := en.detach(req, rsp); rs != nil {
			if stop == nil && stop2 == nil {
				en.serveEvents(ctx, rsp, sk, rs, done)
				return
			}
			go func() {
				defer en.detached.wg.Done()
				res := pump(ctx, rsp, sk, en.ka, stop, stop2)
				rs.end(ctx, rsp, res != PumpClientGone)
				en.streamEnded(rs, rsp, res, done)
			}()
			return
		}
		res = pump(req.Context(), rsp, sk, en.ka, stop, stop2)
	}
	done(res)
}

// streamEnded releases a detached stream whose connection is closed:
// its observation is finished (duration, span, access log for the whole
// stream), it leaves the hangup watcher and the detached set, and done
// gets the result.
func (en *Engine) streamEnded(rs *rawStream, rsp *Responder, res PumpResult, done func(PumpResult)) {
	if rs.obs != nil {
		rs.obs.Finish(rs.out, rsp.sessionID)
	}
	en.detached.hang.forget(rs)
	en.detached.remove(rs)
	done(res)
}

// detach hijacks rsp's connection and hands the response to a rawStream
// whose goroutines (the caller's writer, started with the returned context,
// and the reader started here where there is no hangup watcher) are counted
// in en.detached.wg. It
// returns nil if the connection cannot be had; rsp then goes on in the
// handler.
func (en *Engine) detach(req *http.Request, rsp *Responder) (context.Context, *rawStream) {
	rsp.detachable = false
	d := &en.detached
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, nil
	}
	d.wg.Add(2) // the writer and the reader; before close can Wait
	d.mu.Unlock()
	c, _, err := rsp.rc.Hijack()
	if err != nil {
		d.wg.Add(-2)
		return nil, nil
	}
	rsp.buf = nil // written by the handler; the stream assembles its own
	if rsp.started {
		// The head went out through net/http: its header map is not
		// needed any more (most of a waiting stream's own bytes).
		rsp.hdr = nil
	}
	// The request's context ends when the handler returns; what follows
	// needs none of its values, so it is not kept.
	ctx, cancel := context.WithCancel(context.Background())
	// A response already started is an SSE stream whose head net/http
	// wrote: HTTP/1.1 without a length, so its body is chunked.
	rs := &rawStream{c: c, cancel: cancel, chunks: rsp.started, writers: &d.writers}
	rs.job.done = make(chan struct{}, 1)
	if o, ok := rsp.w.(Observed); ok {
		rs.obs = o.HandOff()
	}
	rsp.amu.Lock()
	// net/http's buffers, request and response go with w and rc.
	rsp.w, rsp.rc, rsp.raw = nil, nil, rs
	if rsp.aborted { // hijacking cleared the deadline an abort had set
		rsp.abortLocked()
	}
	rsp.amu.Unlock()
	d.mu.Lock()
	if d.m == nil {
		d.m = map[*rawStream]*Responder{}
	}
	d.m[rs] = rsp
	d.total.Add(1)
	closed := d.closed
	d.mu.Unlock()
	if closed { // close ran while this stream was being detached
		rsp.abort()
		cancel()
	}
	if d.hang.watch(rs, func(loop func()) {
		d.wg.Add(1) // the watcher, until close; counted under hang.mu
		go func() {
			defer d.wg.Done()
			loop()
		}()
	}) {
		d.wg.Done() // no reader
		return ctx, rs
	}
	go func() {
		defer d.wg.Done()
		rs.read()
	}()
	return ctx, rs
}
