package serve

import (
	"cmp"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// An obsWriter stands in for the ResponseWriter of one HTTP request while
// metrics, traces or the access log are on: it learns the status and the
// bytes sent, and carries the request's telemetry.Op down to the call that
// the child answers. Without any of them ServeHTTP does not wrap at all.
type obsWriter struct {
	http.ResponseWriter
	h       *Handler
	status  int
	in, out int64
	sse     bool
	method  string
	tool    string
	op      *telemetry.Op
	batch   []*telemetry.Op // the requests of a batch POST, each its own Op

	// What finishing needs once the handler has returned: a stream that
	// left net/http (stream/detach.go) finishes its request's observation itself,
	// with a copy of this (handedOff is then set on the original).
	start            time.Time
	who              func() string
	httpMethod, path string
	handedOff        bool
}

var obsPool = sync.Pool{New: func() any { return new(obsWriter) }}

var _ stream.Observed = (*obsWriter)(nil) // a detached stream takes its observation along

func (o *obsWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

func (o *obsWriter) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
		if code == http.StatusOK && mediaType(first(o.Header()[keyContentType])) == "text/event-stream" {
			o.sse = true
			o.h.tel.StreamOpened()
		}
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *obsWriter) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.WriteHeader(http.StatusOK)
	}
	n, err := o.ResponseWriter.Write(b)
	o.out += int64(n)
	return n, err
}

// opOf returns the Op of the request w answers, if it is observed.
func opOf(w http.ResponseWriter) *telemetry.Op {
	if o := obsOf(w); o != nil {
		return o.op
	}
	return nil
}

// obsOf returns the obsWriter of the request w answers, if it is observed:
// w itself, or one that w wraps (an HTTP+SSE POST's, sse.go).
func obsOf(w http.ResponseWriter) *obsWriter {
	switch v := w.(type) {
	case *obsWriter:
		return v
	case *sseReply:
		o, _ := v.w.(*obsWriter)
		return o
	}
	return nil
}

// serveObserved serves r through an obsWriter and then records the
// request: its Op (duration, span), rejected statuses, the access log.
func (h *Handler) serveObserved(w http.ResponseWriter, r *http.Request) {
	h.observeWith(w, r, h.serveHTTP)
}

// observeWith is serveObserved with next serving r (an in-process
// session's messages enter past the HTTP checks: entry.go).
func (h *Handler) observeWith(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	o := obsPool.Get().(*obsWriter)
	*o = obsWriter{ResponseWriter: w, h: h, start: time.Now(), who: noPrincipal, httpMethod: r.Method, path: r.URL.Path}
	defer func() {
		*o = obsWriter{}
		obsPool.Put(o)
	}()
	if r.ContentLength > 0 {
		o.in = r.ContentLength
	}
	if h.accessLog || (h.tel != nil && h.guard.Required()) {
		// The guard admits a copy of r; the slot is how its principal
		// gets back out here (without credentials there is none to
		// learn: every request is anonymous).
		r, o.who = auth.PrincipalSlot(r)
	}
	next(o, r)
	if !o.handedOff {
		h.finishObserved(o, first(w.Header()[keySessionID]))
	}
}

func noPrincipal() string { return "" }

// HandOff returns a copy of o for a stream that leaves net/http, which
// finishes the request's observation when it ends (its duration, span,
// access-log line and bytes are the whole stream's, not the part before
// it left); o itself then records nothing. It makes o a stream.Observed.
func (o *obsWriter) HandOff() stream.Observer {
	c := *o
	c.ResponseWriter = nil
	o.handedOff, o.sse = true, false
	return &c
}

// Head, SSEOpened and Finish make a handed-off copy the stream.Observer of
// the stream that took it: the stream's own head sets the status (unless
// net/http wrote one), an SSE head counts an open stream, and the end
// adds the stream's bytes and records the request.
func (o *obsWriter) Head(status int) {
	if o.status == 0 {
		o.status = status
	}
}

func (o *obsWriter) SSEOpened() {
	o.status, o.sse = http.StatusOK, true
	o.h.tel.StreamOpened()
}

func (o *obsWriter) Finish(out int64, session string) {
	o.out += out
	o.h.finishObserved(o, session)
}

// finishObserved records a request once its response has ended: its Op
// (duration, span), rejected statuses, the open-streams gauge, the access
// log. session is the Mcp-Session-Id the response named, if any.
func (h *Handler) finishObserved(o *obsWriter, session string) {
	status := o.status
	if status == 0 {
		status = http.StatusOK
	}
	if o.sse {
		h.tel.StreamClosed()
	}
	// Metrics name the principal as the access log does: by its name,
	// never the token.
	who := o.who()
	h.tel.Request(who)
	if status >= 400 {
		h.tel.Rejected(status)
	}
	endOp(o.op, status, session)
	for _, op := range o.batch {
		endOp(op, status, session)
	}
	if h.accessLog {
		// Never the token or a body: the principal by its short name.
		h.log.Info().Str("http_method", o.httpMethod).Str("path", o.path).Str("mcp_method", o.method).
			Str("tool", o.tool).Int("status", status).Int64("took_ms", time.Since(o.start).Milliseconds()).
			Str("principal", cmp.Or(who, "anonymous")).Int64("bytes_in", o.in).Int64("bytes_out", o.out).
			Msg("request")
	}
}

// endOp ends a request's Op (nil: not observed) with its HTTP status.
func endOp(op *telemetry.Op, status int, session string) {
	if op == nil {
		return
	}
	if status >= 400 {
		op.Fail(strconv.Itoa(status), http.StatusText(status))
	}
	op.SetSession(session)
	op.End()
}

var (
	keySessionID   = http.CanonicalHeaderKey(wire.HeaderSessionID)
	keyContentType = "Content-Type"
	keyTraceparent = http.CanonicalHeaderKey("traceparent")
	keyTracestate  = http.CanonicalHeaderKey("tracestate")
)

// observe notes the parsed request for telemetry and returns the message to
// relay: m itself, untouched or with its params._meta edited in place
// (telemetry.WithTrace) to carry the trace context the child should
// continue (tools that trace see the caller's trace). When the request is
// observed, the edit waits in its Op instead (Op.Hold): childConn.start
// splices it into the copy it makes for the child's id, and a path that
// passes the request on otherwise takes it first (Op.Relayed).
// With neither tracing nor a traceparent header it returns m untouched and
// allocates nothing.
func (h *Handler) observe(w http.ResponseWriter, r *http.Request, m *wire.Message) *wire.Message {
	o := obsOf(w)
	if o != nil {
		o.method = m.Method
		if m.Method == "tools/call" {
			o.tool = m.Name
		}
	}
	op, m := h.traced(o, r, m)
	if op != nil {
		o.op = op
	}
	return m
}

// traced begins the Op of request m when o observes it (nil otherwise) and
// returns it with the message to relay, as observe describes (the Op
// holds the trace edit).
func (h *Handler) traced(o *obsWriter, r *http.Request, m *wire.Message) (*telemetry.Op, *wire.Message) {
	hdrParent := first(r.Header[keyTraceparent])
	if m.Kind != wire.KindRequest || (hdrParent == "" && h.tel == nil) {
		return nil, m
	}
	meta := telemetry.ReadMeta(m)
	parent, state := meta.Parent, meta.State
	if parent == "" {
		parent, state = hdrParent, first(r.Header[keyTracestate])
	}
	if o != nil && h.tel != nil {
		version := m.ProtocolVersion
		if version == "" {
			version = first(r.Header[keyProtocolVersion])
		}
		// The span starts with the HTTP request (o.start): one clock
		// read fewer on every call.
		op := h.tel.Begin(&telemetry.Request{
			Method: m.Method, Name: m.Name, ID: m.IDBytes(), Version: version,
			Session: first(r.Header[keySessionID]), Start: o.start,
			MetaParent: meta.Parent, MetaState: meta.State,
			HeaderParent: hdrParent, HeaderState: first(r.Header[keyTracestate]),
		})
		op.Hold(meta)
		return op, m
	}
	if parent == "" || (parent == meta.Parent && state == meta.State) {
		return nil, m // nothing the child does not have already
	}
	return nil, telemetry.WithTrace(m, parent, state)
}

// observeBatched begins the Op of a request inside a batch (2025-03-26):
// each gets its own span and duration, as it would sent alone, ended with
// the HTTP request that carried them. It returns the message to relay.
func (h *Handler) observeBatched(w http.ResponseWriter, r *http.Request, m *wire.Message) (*telemetry.Op, *wire.Message) {
	o := obsOf(w)
	if o != nil {
		o.method = "batch" // the access log's line is the HTTP request's
	}
	op, m := h.traced(o, r, m)
	if op != nil {
		o.batch = append(o.batch, op)
	}
	return op, op.Relayed(m)
}

// gauges is what /metrics reads of the Handler.
func (h *Handler) gauges() telemetry.Gauges {
	return telemetry.Gauges{
		Children:       int(h.env.Children.Load()),
		LegacySessions: h.sessions.count(),
		BufferedBytes:  h.lim.Buffered(),
		Inflight:       int(h.lim.Inflight()),
	}
}
