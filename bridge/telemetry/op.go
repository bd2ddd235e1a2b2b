package telemetry

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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
// outcome and, at End, records its duration.
type Op struct {
	s                     *Scope
	start                 time.Time
	method, tool, version string
	span                  trace.Span // nil unless tracing
	parent, state         string     // what to pass on without tracing

	mu      sync.Mutex
	errType string
	errMsg  string
}

// Begin starts observing r. It returns nil (a valid, inert Op) when s is.
func (s *Scope) Begin(r *Request) *Op {
	if s == nil {
		return nil
	}
	o := &Op{s: s, start: r.Start, method: r.Method, version: r.Version}
	if r.Method == "tools/call" {
		o.tool = r.Name
	}
	if o.start.IsZero() {
		o.start = time.Now()
	}
	// semconv: "MCP server instrumentation SHOULD, by default, use context
	// extracted from MCP params._meta as a parent for MCP server span and
	// SHOULD link current ambient context, if it's present." The HTTP
	// headers are that ambient context; without _meta they are the parent.
	o.parent, o.state = r.MetaParent, r.MetaState
	if o.parent == "" {
		o.parent, o.state = r.HeaderParent, r.HeaderState
	}
	if s.t.tracer == nil {
		return o
	}
	ctx := context.Background()
	var links []trace.Link
	meta, hdr := remote(r.MetaParent, r.MetaState), remote(r.HeaderParent, r.HeaderState)
	switch {
	case meta.IsValid():
		ctx = trace.ContextWithRemoteSpanContext(ctx, meta)
		if hdr.IsValid() {
			links = append(links, trace.Link{SpanContext: hdr})
		}
	case hdr.IsValid():
		ctx = trace.ContextWithRemoteSpanContext(ctx, hdr)
	}
	kind := trace.SpanKindServer
	if s.side == Client {
		kind = trace.SpanKindClient
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, attribute.String("mcp.method.name", r.Method),
		attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
	name := r.Method
	switch r.Method {
	case "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.tool.name", r.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
		name += " " + r.Name
	case "prompts/get":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", r.Name))
		name += " " + r.Name
	}
	if id := jsonrpcID(r.ID); id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
	}
	if r.Version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", r.Version))
	}
	if r.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", r.Session))
	}
	if s.name != "" {
		attrs = append(attrs, attribute.String("mcp.bridge.server", s.name))
	}
	_, o.span = s.t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(o.start),
		trace.WithAttributes(attrs...), trace.WithLinks(links...))
	return o
}

// jsonrpcID is the string form of a raw id (semconv: not for null or
// absent ids).
func jsonrpcID(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		if s, err := strconv.Unquote(string(raw)); err == nil {
			return s
		}
	}
	return string(raw)
}

// Propagate returns the trace context to pass on in params._meta: the
// Op's own span when tracing, else the one the request came with.
func (o *Op) Propagate() (parent, state string) {
	if o == nil {
		return "", ""
	}
	if o.span == nil {
		return o.parent, o.state
	}
	c := traceCarrier{}
	w3c.Inject(trace.ContextWithSpan(context.Background(), o.span), &c)
	return c.parent, c.state
}

// SetSession names the 2025 session the request belongs to, when it is
// known only after the request (an initialize minting one).
func (o *Op) SetSession(id string) {
	if o != nil && o.span != nil && id != "" {
		o.span.SetAttributes(attribute.String("mcp.session.id", id))
	}
}

// Fail records what the request ended with, unless an earlier cause was
// recorded (the JSON-RPC error of the response comes before the HTTP
// status it was sent with). errType should be low-cardinality.
func (o *Op) Fail(errType, msg string) {
	if o == nil || errType == "" {
		return
	}
	o.mu.Lock()
	if o.errType == "" {
		o.errType, o.errMsg = errType, msg
	}
	o.mu.Unlock()
}

// Result reads a final response: a JSON-RPC error is error.type = its code
// (semconv: "the string representation of the JSON-RPC error code"); a
// tools/call result with isError true is tool_error. It may run on another
// goroutine than the request's.
func (o *Op) Result(m *wire.Message) {
	if o == nil {
		return
	}
	switch {
	case m.Error.Present():
		msg, _ := wire.StringField(m.Raw, m.Error, "message")
		o.Fail(strconv.Itoa(m.ErrorCode), msg)
	case o.method == "tools/call" && m.Result.Present():
		if sp, ok := wire.Field(m.Raw, m.Result, "isError"); ok && bytes.Equal(m.Raw[sp.Start:sp.End], []byte("true")) {
			o.Fail(ErrorToolError, "")
		}
	}
}

// End records the duration and ends the span. Call it once.
func (o *Op) End() {
	if o == nil {
		return
	}
	o.mu.Lock()
	errType, msg := o.errType, o.errMsg
	o.mu.Unlock()
	if o.s.metrics() {
		o.s.observe(o.method, o.tool, o.version, errType, time.Since(o.start).Seconds())
	}
	if o.span != nil {
		if errType != "" {
			o.span.SetAttributes(attribute.String("error.type", errType))
			if _, err := strconv.Atoi(errType); err == nil && errType[0] == '-' {
				o.span.SetAttributes(attribute.String("rpc.response.status_code", errType))
			}
			o.span.SetStatus(codes.Error, msg)
		}
		o.span.End()
	}
}

// WithTrace is WithTraceContext for a relay: the edited message, parsed,
// or m itself when it cannot be edited (it then travels as sent).
func WithTrace(m *wire.Message, parent, state string) *wire.Message {
	raw := WithTraceContext(m, parent, state)
	if raw == nil {
		return m
	}
	var out wire.Message
	if wire.Parse(raw, &out) != nil {
		return m
	}
	return &out
}

// WithTraceContext returns m with params._meta.traceparent (and tracestate,
// when given) set: replaced where present, added where not. It returns nil
// when _meta holds the keys in a form it cannot edit unambiguously
// (duplicated, escaped): the message then travels as the client sent it.
func WithTraceContext(m *wire.Message, parent, state string) []byte {
	var edits []wire.Edit
	var add []byte
	for _, f := range [...]struct{ key, val string }{{"traceparent", parent}, {"tracestate", state}} {
		if f.val == "" {
			continue
		}
		v := wire.AppendString(nil, f.val)
		if sp, ok := wire.Field(m.Raw, m.Meta, f.key); ok {
			edits = append(edits, wire.Edit{Span: sp, Value: v})
			continue
		}
		if m.Meta.Present() && (containsFold(m.Bytes(m.Meta), f.key[1:]) || bytes.Contains(m.Bytes(m.Meta), []byte(`\u`))) {
			return nil // there, but not in one plain spelling
		}
		if len(add) > 0 {
			add = append(add, ',')
		}
		add = append(append(wire.AppendString(add, f.key), ':'), v...)
	}
	if len(edits) > 0 && len(add) > 0 {
		// Replace first, then add to the edited message.
		var mid wire.Message
		if wire.Parse(wire.Splice(m.Raw, edits...), &mid) != nil {
			return nil
		}
		return wire.WithMetaFields(&mid, add)
	}
	if len(add) > 0 {
		return wire.WithMetaFields(m, add)
	}
	if len(edits) > 0 {
		return wire.Splice(m.Raw, edits...)
	}
	return nil
}

// containsFold reports whether b contains s in any ASCII case (a decoder
// may take "TraceParent" for the key the bridge would add).
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}
