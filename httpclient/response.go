package httpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind says how a 2xx response carries its messages.
type Kind int

const (
	// KindAccepted is a 202 Accepted, or any 2xx with an empty body: the
	// server took the message and sends nothing back on this response.
	KindAccepted Kind = iota
	// KindJSON is a single JSON-RPC message in an application/json body.
	KindJSON
	// KindSSE is a text/event-stream body carrying zero or more messages.
	KindSSE
)

func (k Kind) String() string {
	switch k {
	case KindAccepted:
		return "accepted"
	case KindJSON:
		return "json"
	case KindSSE:
		return "sse"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// A Response is a 2xx reply from [Client.Post] or [Client.Resume]. Next
// must be called from one goroutine at a time; Close, LastEventID and
// RetryDelay may be called from any goroutine. The caller must Close every
// Response; a Response that reached io.EOF or an error has already released
// its connection, and Close is then a no-op.
type Response struct {
	StatusCode int         // the 2xx status
	Header     http.Header // the response headers
	Kind       Kind        // how the body carries messages

	method   string
	ctx      context.Context // the request's context; nil only for a zero Response
	cancel   context.CancelFunc
	body     io.ReadCloser
	maxEvent int

	jsonLen   int64   // KindJSON: the body's Content-Length, or -1
	jsonFirst []byte  // KindJSON of unknown length: the byte read to tell it from empty
	jsonBuf   *[]byte // pooled buffer holding the body Next returned
	frames    *framer // KindSSE: r3labs' framer and its workarounds
	pending   []byte  // rest of the current raw event block
	data      []byte  // reused buffer for multi-line data
	truncated bool    // pending ends in an event cut short by a body failure
	err       error   // sticky result once the body is done
	evName    string  // KindSSE: the event name of the last message Next returned

	// feed, if set, replaces the body: the messages of one POST that the
	// legacy HTTP+SSE transport delivers on its shared stream (legacysse.go).
	feed func() ([]byte, error)

	closed      atomic.Bool
	releaseOnce sync.Once

	mu         sync.Mutex // guards the fields below
	lastID     string
	retry      time.Duration
	hasRetry   bool
	dispatched int // events with data or an id, for Listen's backoff reset
}

// newResponse classifies a 2xx response. For a GET (sseOnly) anything but
// text/event-stream is a *ContentTypeError. On error the response is released.
func newResponse(ctx context.Context, cancel context.CancelFunc, method string, resp *http.Response, maxEvent int, sseOnly bool) (*Response, error) {
	r := &Response{
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		method:     method,
		ctx:        ctx,
		cancel:     cancel,
		body:       resp.Body,
		maxEvent:   maxEvent,
	}
	ct := resp.Header.Get("Content-Type")
	mt := mediaType(ct)
	if mt == mediaSSE {
		r.Kind = KindSSE
		r.frames = newFramer(resp.Body, maxEvent)
		return r, nil
	}
	if sseOnly {
		r.release()
		return nil, &ContentTypeError{Method: method, StatusCode: resp.StatusCode, ContentType: ct}
	}
	// 2025-11-25 transports §Sending Messages to the Server: for a message
	// that is not a request the server "MUST return HTTP status code 202
	// Accepted with no body". Some servers answer 200/204 with no body.
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent || resp.ContentLength == 0 {
		r.accept()
		return r, nil
	}
	if mt == mediaJSON {
		r.Kind = KindJSON
		r.jsonLen = resp.ContentLength
		if r.jsonLen < 0 {
			// Unknown length (chunked): an empty body is a 202 in disguise.
			var one [1]byte
			n, err := io.ReadFull(resp.Body, one[:])
			if n == 0 {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					r.accept()
					return r, nil
				}
				return nil, r.fail(err)
			}
			r.jsonFirst = one[:1:1]
		}
		return r, nil
	}
	r.release()
	return nil, &ContentTypeError{Method: method, StatusCode: resp.StatusCode, ContentType: ct}
}

// mediaType returns the lower-cased media type of a Content-Type value
// without parameters such as "; charset=utf-8".
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// accept turns r into a KindAccepted response, draining the (empty or
// ignored) body so the connection can be reused.
func (r *Response) accept() {
	r.Kind = KindAccepted
	r.err = io.EOF
	discard(r.body)
	r.release()
}

// Next returns the next message.
//
// For [KindJSON] it returns the whole body once, exactly as received (a
// pretty-printed body is not compacted). For [KindSSE] it returns the data
// of each event whose data is not empty, whatever the event name; comments,
// keep-alives and priming events (an id with empty data) are skipped but
// their id and retry fields are recorded. For [KindAccepted] it returns
// io.EOF at once. At the clean end of the body it returns io.EOF.
//
// The returned slice is valid only until the next call to Next or Close;
// copy it to keep it.
//
// Errors are sticky. If the request's context ended, Next returns ctx.Err();
// after Close, [ErrClosed]; for an event or JSON body above MaxEventSize, an
// error matching [ErrEventTooLarge]; other read errors (a connection reset,
// a truncated chunked body) are wrapped. After a read error a stream can be
// resumed with [Client.Resume] from [Response.LastEventID].
func (r *Response) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.closed.Load() {
		return nil, r.fail(ErrClosed)
	}
	if r.feed != nil {
		msg, err := r.feed()
		if err != nil {
			return nil, r.fail(err)
		}
		return msg, nil
	}
	switch r.Kind {
	case KindJSON:
		if r.body != nil {
			return r.nextJSON()
		}
	case KindSSE:
		if r.frames != nil {
			return r.nextSSE()
		}
	}
	return nil, r.fail(io.EOF)
}

// JSON body buffers are recycled in two pools by size, so that a large
// tool result does not cost a fresh, zeroed allocation of its size for
// every response, and a small one does not hold a large buffer: with one
// pool of 64 KiB buffers, 1,024 calls in flight held 64 MiB, and buffers
// the pool lost at each GC were re-made and zeroed at 64 KiB apiece,
// 27-40% of connect's allocated bytes at that concurrency
// (docs/benchmarks.md).
const (
	smallJSON = 4 << 10  // the small pool's buffers: most MCP responses fit
	maxPooled = 32 << 20 // larger buffers are left to the GC
)

var (
	smallJSONPool = sync.Pool{New: func() any { b := make([]byte, 0, smallJSON); return &b }}
	largeJSONPool sync.Pool // *[]byte with cap > smallJSON
)

// getJSONBuf returns a buffer for a body of n bytes (-1: unknown).
func getJSONBuf(n int64) *[]byte {
	if n > smallJSON {
		if bp, ok := largeJSONPool.Get().(*[]byte); ok {
			return bp
		}
	}
	return smallJSONPool.Get().(*[]byte)
}

func putJSONBuf(bp *[]byte) {
	switch c := cap(*bp); {
	case c > maxPooled:
	case c > smallJSON:
		largeJSONPool.Put(bp)
	default:
		smallJSONPool.Put(bp)
	}
}

func (r *Response) nextJSON() ([]byte, error) {
	bp := getJSONBuf(r.jsonLen)
	b := append((*bp)[:0], r.jsonFirst...)
	if r.jsonLen > 0 && r.jsonLen <= int64(r.maxEvent) && int64(cap(b)) < r.jsonLen {
		b = make([]byte, 0, r.jsonLen)
	}
	b, err := readAllInto(b, io.LimitReader(r.body, int64(r.maxEvent)+1-int64(len(b))))
	*bp = b
	r.mu.Lock()
	if r.closed.Load() {
		bp = nil // closed meanwhile: the buffer stays with this response
	}
	r.jsonBuf = bp
	r.mu.Unlock()
	if err != nil {
		return nil, r.fail(err)
	}
	if len(b) > r.maxEvent {
		return nil, r.fail(fmt.Errorf("%w: JSON body over %d bytes", ErrEventTooLarge, r.maxEvent))
	}
	r.fail(io.EOF) // the next call reports the end; the connection is free now
	return b, nil
}

func (r *Response) nextSSE() ([]byte, error) {
	for {
		if len(r.pending) == 0 {
			raw, truncated, err := r.frames.next()
			if err != nil {
				return nil, r.fail(err)
			}
			if len(raw) == 0 {
				continue // stray blank lines frame as empty tokens
			}
			r.pending, r.truncated = raw, truncated
		}
		ev, rest, blank := parseEvent(r.pending, &r.data)
		r.pending = rest
		if r.truncated && !blank {
			continue // cut short by the failure: neither data nor id count
		}
		r.note(&ev)
		if len(ev.data) > 0 {
			if string(ev.event) != r.evName { // compared without allocating
				r.evName = string(ev.event)
			}
			return ev.data, nil
		}
	}
}

// note records the id and retry fields of ev.
func (r *Response) note(ev *sseEvent) {
	if !ev.hasID && !ev.hasRetry && len(ev.data) == 0 {
		return
	}
	r.mu.Lock()
	if ev.hasID {
		// WHATWG: an id field, even an empty one, sets the last event ID.
		if string(ev.id) != r.lastID { // compared without allocating
			r.lastID = string(ev.id)
		}
	}
	if ev.hasRetry {
		r.retry, r.hasRetry = ev.retry, true
	}
	if ev.hasID || len(ev.data) > 0 {
		r.dispatched++
	}
	r.mu.Unlock()
}

// fail maps err to what Next reports, makes it sticky and releases the
// connection.
func (r *Response) fail(err error) error {
	switch {
	case r.closed.Load():
		err = ErrClosed
	case r.ctx != nil && r.ctx.Err() != nil:
		// The framer reports a read cut by our context as io.EOF
		// (sseframer.go); the context says what it was.
		err = r.ctx.Err()
	case err == io.EOF && r.frames != nil && r.frames.bodyErr() != nil:
		// The same, for a body that failed on its own.
		err = fmt.Errorf("httpclient: reading %s response: %w", r.method, r.frames.bodyErr())
	case err == io.EOF, errors.Is(err, ErrEventTooLarge):
	case errors.Is(err, bufio.ErrTooLong):
		err = fmt.Errorf("%w (limit %d bytes): %w", ErrEventTooLarge, r.maxEvent, err)
	default:
		err = fmt.Errorf("httpclient: reading %s response: %w", r.method, err)
	}
	r.err = err
	r.release()
	return err
}

// LastEventID returns the id of the last SSE event seen, priming events
// included, for use as Last-Event-ID when resuming; "" if none. For a
// Response from [Client.Resume] it starts as the lastEventID passed there.
func (r *Response) LastEventID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastID
}

// RetryDelay returns the value of the last SSE retry field seen, 0 if none.
// 2025-11-25 transports §Sending Messages to the Server: "The client MUST
// respect the retry field, waiting the given number of milliseconds before
// attempting to reconnect."
func (r *Response) RetryDelay() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retry
}

// retryState returns the retry field and whether one was seen.
func (r *Response) retryState() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retry, r.hasRetry
}

func (r *Response) dispatchedEvents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dispatched
}

// Close closes the body. For an unfinished body this aborts the HTTP request,
// so the server sees the client disconnect; a Next blocked in another
// goroutine returns [ErrClosed]. Close is idempotent and safe to call
// concurrently with Next.
func (r *Response) Close() error {
	if !r.closed.Swap(true) {
		// The caller is done with what Next returned: its buffer may serve
		// the next response.
		r.mu.Lock()
		bp := r.jsonBuf
		r.jsonBuf = nil
		r.mu.Unlock()
		if bp != nil {
			putJSONBuf(bp)
		}
	}
	return r.release()
}

// readAllInto appends all of rd to b, growing it by doubling.
func readAllInto(b []byte, rd io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// release cancels the request and closes the body, once. Cancelling first
// unblocks a Read in progress on another goroutine.
func (r *Response) release() error {
	var err error
	r.releaseOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		if r.body != nil {
			err = r.body.Close()
		}
	})
	return err
}
