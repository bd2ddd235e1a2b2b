package telemetry

import (
	"cmp"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// An HTTPObserver observes the HTTP requests of one MCP endpoint (serve's
// Handler): each request's Op (duration, span), rejected statuses, open
// SSE streams, the access log. Its zero value, and one with neither a
// Scope nor AccessLog, observes nothing (On is false): the endpoint then
// serves without wrapping at all.
type HTTPObserver struct {
	Scope     *Scope // nil: no metrics, no spans
	AccessLog bool   // one info line per request on Log
	Log       zerolog.Logger
	// Principal, when set, prepares a request so that whom the endpoint
	// admits it as can be learned after it is served (auth.PrincipalSlot).
	// Set it only when something reads it: the access log, or metrics of
	// an endpoint that requires credentials (without credentials there is
	// none to learn: every request is anonymous).
	Principal func(*http.Request) (*http.Request, func() string)
}

// On reports whether f observes anything.
func (f *HTTPObserver) On() bool { return f.Scope != nil || f.AccessLog }

// An ObsWriter stands in for the ResponseWriter of one HTTP request while
// metrics, traces or the access log are on: it learns the status and the
// bytes sent, and carries the request's Op down to the call that
// the child answers. Without any of them the endpoint does not wrap at all.
type ObsWriter struct {
	http.ResponseWriter
	f       *HTTPObserver
	status  int
	in, out int64
	sse     bool
	method  string
	tool    string
	op      *Op
	batch   []*Op // the requests of a batch POST, each its own Op

	// What finishing needs once the handler has returned: a stream that
	// left net/http (stream/detach.go) finishes its request's observation itself,
	// with a copy of this (handedOff is then set on the original).
	start            time.Time
	who              func() string
	httpMethod, path string
	handedOff        bool
}

var obsPool = sync.Pool{New: func() any { return new(ObsWriter) }}

var _ stream.Observed = (*ObsWriter)(nil) // a detached stream takes its observation along

func (o *ObsWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

func (o *ObsWriter) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
		if code == http.StatusOK && wire.MediaType(get(o.Header(), keyContentType)) == "text/event-stream" {
			o.sse = true
			o.f.Scope.StreamOpened()
		}
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *ObsWriter) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.WriteHeader(http.StatusOK)
	}
	n, err := o.ResponseWriter.Write(b)
	o.out += int64(n)
	return n, err
}

// Op returns the Op of the request o answers (nil o: not observed).
func (o *ObsWriter) Op() *Op {
	if o != nil {
		return o.op
	}
	return nil
}

// Serve serves r with next through an ObsWriter and then records the
// request: its Op (duration, span), rejected statuses, the access log.
func (f *HTTPObserver) Serve(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	o := obsPool.Get().(*ObsWriter)
	*o = ObsWriter{ResponseWriter: w, f: f, start: time.Now(), who: noPrincipal, httpMethod: r.Method, path: r.URL.Path}
	defer func() {
		*o = ObsWriter{}
		obsPool.Put(o)
	}()
	if r.ContentLength > 0 {
		o.in = r.ContentLength
	}
	if f.Principal != nil {
		// The guard admits a copy of r; the slot is how its principal
		// gets back out here.
		r, o.who = f.Principal(r)
	}
	next(o, r)
	if !o.handedOff {
		f.finish(o, get(w.Header(), keySessionID))
	}
}

func noPrincipal() string { return "" }

// HandOff returns a copy of o for a stream that leaves net/http, which
// finishes the request's observation when it ends (its duration, span,
// access-log line and bytes are the whole stream's, not the part before
// it left); o itself then records nothing. It makes o a stream.Observed.
func (o *ObsWriter) HandOff() stream.Observer {
	c := *o
	c.ResponseWriter = nil
	o.handedOff, o.sse = true, false
	return &c
}

// Head, SSEOpened and Finish make a handed-off copy the stream.Observer of
// the stream that took it: the stream's own head sets the status (unless
// net/http wrote one), an SSE head counts an open stream, and the end
// adds the stream's bytes and records the request.
func (o *ObsWriter) Head(status int) {
	if o.status == 0 {
		o.status = status
	}
}

func (o *ObsWriter) SSEOpened() {
	o.status, o.sse = http.StatusOK, true
	o.f.Scope.StreamOpened()
}

func (o *ObsWriter) Finish(out int64, session string) {
	o.out += out
	o.f.finish(o, session)
}

// finish records a request once its response has ended: its Op
// (duration, span), rejected statuses, the open-streams gauge, the access
// log. session is the Mcp-Session-Id the response named, if any.
func (f *HTTPObserver) finish(o *ObsWriter, session string) {
	status := o.status
	if status == 0 {
		status = http.StatusOK
	}
	if o.sse {
		f.Scope.StreamClosed()
	}
	// Metrics name the principal as the access log does: by its name,
	// never the token.
	who := o.who()
	f.Scope.Request(who)
	if status >= 400 {
		f.Scope.Rejected(status)
	}
	endOp(o.op, status, session)
	for _, op := range o.batch {
		endOp(op, status, session)
	}
	if f.AccessLog {
		// Never the token or a body: the principal by its short name.
		f.Log.Info().Str("http_method", o.httpMethod).Str("path", o.path).Str("mcp_method", o.method).
			Str("tool", o.tool).Int("status", status).Int64("took_ms", time.Since(o.start).Milliseconds()).
			Str("principal", cmp.Or(who, "anonymous")).Int64("bytes_in", o.in).Int64("bytes_out", o.out).
			Msg("request")
	}
}

// endOp ends a request's Op (nil: not observed) with its HTTP status.
func endOp(op *Op, status int, session string) {
	if op == nil {
		return
	}
	if status >= 400 {
		op.Fail(strconv.Itoa(status), http.StatusText(status))
	}
	op.SetSession(session)
	op.End()
}

// Canonical forms of the headers read here, for direct map access
// (http.Header.Get canonicalizes its argument on every call).
var (
	keySessionID       = http.CanonicalHeaderKey(wire.HeaderSessionID)
	keyProtocolVersion = http.CanonicalHeaderKey(wire.HeaderProtocolVersion)
	keyContentType     = "Content-Type"
	keyTraceparent     = http.CanonicalHeaderKey("traceparent")
	keyTracestate      = http.CanonicalHeaderKey("tracestate")
)

// get returns the first value of h under key, a canonical name.
func get(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Message notes the parsed request m for telemetry (o: its ObsWriter, nil
// when the request is not observed) and returns the message to relay: m
// itself, untouched or with its params._meta edited in place (WithTrace)
// to carry the trace context the child should continue (tools that trace
// see the caller's trace). When the request is observed, the edit waits in
// its Op instead (Op.Hold): the child's connection splices it into the
// copy it makes for the child's id, and a path that passes the request on
// otherwise takes it first (Op.Relayed).
// With neither tracing nor a traceparent header it returns m untouched and
// allocates nothing.
func (f *HTTPObserver) Message(o *ObsWriter, r *http.Request, m *wire.Message) *wire.Message {
	if o != nil {
		o.method = m.Method
		if m.Method == "tools/call" {
			o.tool = m.Name
		}
	}
	op, m := f.traced(o, r, m)
	if op != nil {
		o.op = op
	}
	return m
}

// traced begins the Op of request m when o observes it (nil otherwise) and
// returns it with the message to relay, as Message describes (the Op
// holds the trace edit).
func (f *HTTPObserver) traced(o *ObsWriter, r *http.Request, m *wire.Message) (*Op, *wire.Message) {
	hdrParent := get(r.Header, keyTraceparent)
	if m.Kind != wire.KindRequest || (hdrParent == "" && f.Scope == nil) {
		return nil, m
	}
	meta := ReadMeta(m)
	parent, state := meta.Parent, meta.State
	if parent == "" {
		parent, state = hdrParent, get(r.Header, keyTracestate)
	}
	if o != nil && f.Scope != nil {
		version := m.ProtocolVersion
		if version == "" {
			version = get(r.Header, keyProtocolVersion)
		}
		// The span starts with the HTTP request (o.start): one clock
		// read fewer on every call.
		op := f.Scope.Begin(&Request{
			Method: m.Method, Name: m.Name, ID: m.IDBytes(), Version: version,
			Session: get(r.Header, keySessionID), Start: o.start,
			MetaParent: meta.Parent, MetaState: meta.State,
			HeaderParent: hdrParent, HeaderState: get(r.Header, keyTracestate),
		})
		op.Hold(meta)
		return op, m
	}
	if parent == "" || (parent == meta.Parent && state == meta.State) {
		return nil, m // nothing the child does not have already
	}
	return nil, WithTrace(m, parent, state)
}

// Batched begins the Op of a request inside a batch (2025-03-26): each
// gets its own span and duration, as it would sent alone, ended with the
// HTTP request that carried them. It returns the message to relay.
func (f *HTTPObserver) Batched(o *ObsWriter, r *http.Request, m *wire.Message) (*Op, *wire.Message) {
	if o != nil {
		o.method = "batch" // the access log's line is the HTTP request's
	}
	op, m := f.traced(o, r, m)
	if op != nil {
		o.batch = append(o.batch, op)
	}
	return op, op.Relayed(m)
}
