package telemetry

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// ErrorToolError is error.type for a tools/call whose result has isError
// set (semconv: "SHOULD be set to tool_error").
const ErrorToolError = "tool_error"

// A Request describes one MCP request as it arrived (serve) or as the host
// sent it (connect).
type Request struct {
	Method  string
	Name    string // params.name: the tool of tools/call, the prompt of prompts/get
	ID      []byte // the raw JSON-RPC id
	Version string // MCP protocol version, if known
	Session string // Mcp-Session-Id, if any
	Start   time.Time

	// The W3C trace context the request carries in params._meta, and the
	// one of its HTTP request (serve only).
	MetaParent, MetaState     string
	HeaderParent, HeaderState string
}

// An Op is one MCP request being observed: it holds its span, learns its
// outcome and, at End, records its duration. It is a small handle: what
// the span records lives in a pooled spanRecord that only the Op reaches
// until End.
//
// Ownership of the record (the one rule pooling rests on): Begin takes it
// from the pool and gives it to the Op; every method of the Op reads or
// writes it under mu, and only while o.r is set. End takes it out (o.r =
// nil, under mu) and hands it on — to the batch processor for a sampled
// span, which releases it once the batch holding it has been exported (or
// when it drops it), else straight back to the pool. So the request's
// goroutine, the response writer and a late answer of the child can all
// hold the Op for as long as they like: after End each method finds no
// record and does nothing, and cannot touch the record that has meanwhile
// become another request's span (TestLateCallsDoNotTouchReusedRecord).
type Op struct {
	mu   sync.Mutex
	r    *spanRecord // nil after End
	tool bool        // a tools/call; set by Begin, never written after
}

// A spanRecord is one request's span and metric sample: what Begin learned
// and what the request ended with.
type spanRecord struct {
	s                     *Scope
	start                 time.Time
	method, tool, version string
	parent, state         string // what to pass on without tracing

	// Tracing: sc is the span's own context (valid only when traced);
	// the rest is set only for a sampled span.
	sc       spanContext
	parentID [8]byte // zero for a root span
	hasLink  bool
	link     spanContext // the HTTP header's context when _meta gave the parent
	name     string      // params.name (the tool or the prompt)
	id       string      // the raw JSON-RPC id

	session string
	errType string
	errMsg  string
	endNs   int64 // unix nanoseconds

	// What ReadMeta read of the request, kept by Hold for RelayEdits or
	// Relayed (held: not yet used by Relayed). Cleared at End: it points
	// into the request's bytes, which a queued span must not keep alive.
	meta MetaTrace
	held bool
}

// records is the free list of span records: Begin takes one, End gives
// back an unsampled span's, and the batch processor gives back a whole
// batch at once after exporting it.
//
// Why not a sync.Pool: the records come back in bursts of a batch on the
// processor's goroutine and are taken one at a time on the requests'. A
// pool's per-P chains grew by a batch and were dropped at every GC (the
// chains alone were ~2.6 MB of allocation a 100,000 calls, and the bridge
// runs at the GC's 4 MB floor), and most Gets stole from another P.
var records freeList

// maxFreeRecords bounds what the list keeps: two default batches, as a
// batch comes back at once while the next one fills (at most ~450 KB kept
// after a burst; under load the records are in use anyway).
const maxFreeRecords = 1024

type freeList struct {
	mu   sync.Mutex
	free []*spanRecord
}

func (l *freeList) get() *spanRecord {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		r := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return r
	}
	l.mu.Unlock()
	return new(spanRecord)
}

// put clears rs (nothing of a span may show in the next one) and keeps
// what the bound allows; the rest is garbage.
func (l *freeList) put(rs ...*spanRecord) {
	for _, r := range rs {
		*r = spanRecord{}
	}
	l.mu.Lock()
	if room := maxFreeRecords - len(l.free); len(rs) > room {
		rs = rs[:max(room, 0)]
	}
	l.free = append(l.free, rs...)
	l.mu.Unlock()
}

// release gives r back. Only the record's owner after End calls it, once.
func (r *spanRecord) release() { records.put(r) }

// Begin starts observing req. It returns nil (a valid, inert Op) when s is.
func (s *Scope) Begin(req *Request) *Op {
	if s == nil {
		return nil
	}
	r := records.get()
	r.s, r.start, r.method, r.version = s, req.Start, req.Method, req.Version
	if req.Method == "tools/call" {
		r.tool = req.Name
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	// semconv: "MCP server instrumentation SHOULD, by default, use context
	// extracted from MCP params._meta as a parent for MCP server span and
	// SHOULD link current ambient context, if it's present." The HTTP
	// headers are that ambient context; without _meta they are the parent.
	r.parent, r.state = req.MetaParent, req.MetaState
	if r.parent == "" {
		r.parent, r.state = req.HeaderParent, req.HeaderState
	}
	o := &Op{r: r, tool: req.Method == "tools/call"}
	tr := s.t.tracer
	if tr == nil {
		return o
	}
	// An invalid traceparent is no parent: W3C Trace Context, "If the
	// vendor failed to parse traceparent, it MUST NOT attempt to parse
	// tracestate" and creates a new trace. parseTraceparent may have filled
	// in ids before finding the field invalid (version ff, or 00 with more
	// after the flags): only its ok says what is valid.
	var parent spanContext
	if req.MetaParent != "" {
		if mp, ok := parseTraceparent(req.MetaParent, req.MetaState); ok {
			parent = mp
		}
	}
	if req.HeaderParent != "" {
		if hdr, ok := parseTraceparent(req.HeaderParent, req.HeaderState); ok {
			if parent.valid() {
				r.link, r.hasLink = hdr, true // rare: both carried a context
			} else {
				parent = hdr
			}
		}
	}
	tr.start(r, &parent)
	if r.sc.sampled() {
		r.name, r.session = req.Name, req.Session
		if len(req.ID) > 0 {
			r.id = string(req.ID) // req.ID may be a reused buffer
		}
	}
	return o
}

// jsonrpcID is the string form of a raw id (semconv: not for null or
// absent ids).
func jsonrpcID(raw string) string {
	if raw == "" || raw == "null" {
		return ""
	}
	if raw[0] == '"' {
		if s, err := strconv.Unquote(raw); err == nil {
			return s
		}
	}
	return raw
}

// Propagate returns the trace context to pass on in params._meta: the
// Op's own span when tracing, else the one the request came with.
func (o *Op) Propagate() (parent, state string) {
	var buf [traceparentLen]byte
	parent, state = o.propagate(&buf)
	return strings.Clone(parent), state // parent may point into buf
}

// propagate is Propagate with the Op's own traceparent written into buf:
// the string it returns then points there, and must not outlive buf.
func (o *Op) propagate(buf *[traceparentLen]byte) (parent, state string) {
	if o == nil {
		return "", ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.r.propagate(buf)
}

// propagate is Op.propagate for the record (nil after End), under the
// Op's lock.
func (r *spanRecord) propagate(buf *[traceparentLen]byte) (parent, state string) {
	switch {
	case r == nil:
		return "", ""
	case !r.sc.valid():
		return r.parent, r.state
	}
	b := r.sc.appendTraceparent(buf[:0])
	return unsafe.String(&b[0], len(b)), r.sc.state
}

// SetSession names the 2025 session the request belongs to, when it is
// known only after the request (an initialize minting one).
func (o *Op) SetSession(id string) {
	if o == nil || id == "" {
		return
	}
	o.mu.Lock()
	if r := o.r; r != nil && r.sc.sampled() {
		r.session = id
	}
	o.mu.Unlock()
}

// Fail records what the request ended with, unless an earlier cause was
// recorded (the JSON-RPC error of the response comes before the HTTP
// status it was sent with). errType should be low-cardinality. After End
// it does nothing.
func (o *Op) Fail(errType, msg string) {
	if o == nil || errType == "" {
		return
	}
	o.mu.Lock()
	if r := o.r; r != nil && r.errType == "" {
		r.errType, r.errMsg = errType, msg
	}
	o.mu.Unlock()
}

// Result reads a final response: a JSON-RPC error is error.type = its code
// (semconv: "the string representation of the JSON-RPC error code"); a
// tools/call result with isError true is tool_error. It may run on another
// goroutine than the request's, and after End (it then does nothing).
func (o *Op) Result(m *wire.Message) {
	if o == nil {
		return
	}
	switch {
	case m.Error.Present():
		msg, _ := wire.StringField(m.Raw, m.Error, "message")
		o.Fail(strconv.Itoa(m.ErrorCode), msg)
	case m.Result.Present() && o.tool:
		// o.tool, not the record: Result runs on the child's reader,
		// and taking the Op's lock there pulled its cache line from the
		// request's core on every call.
		if sp, ok := wire.Field(m.Raw, m.Result, "isError"); ok && bytes.Equal(m.Raw[sp.Start:sp.End], []byte("true")) {
			o.Fail(ErrorToolError, "")
		}
	}
}

// End records the duration and ends the span: a sampled span is queued for
// export, never waiting for the network (a full queue drops it). Calls
// after the first do nothing.
func (o *Op) End() {
	if o == nil {
		return
	}
	o.mu.Lock()
	r := o.r
	o.r = nil // from here on, r is this goroutine's alone (see Op)
	o.mu.Unlock()
	if r == nil {
		return // a second End would count twice and race with the exporter
	}
	r.meta, r.held = MetaTrace{}, false
	now := time.Now()
	r.endNs = now.UnixNano()
	if r.s.metrics() {
		r.s.observe(r.method, r.tool, r.version, r.errType, now.Sub(r.start).Seconds())
	}
	if r.sc.sampled() {
		r.s.t.tracer.batch.enqueue(r)
		return
	}
	r.release()
}
