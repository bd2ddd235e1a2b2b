package telemetry

import (
	"bytes"
	"strconv"
	"sync"
	"time"

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
// outcome and, at End, records its duration. With tracing on, the Op is
// the span record itself (one allocation per request): End hands it to
// the batch processor, whose goroutine alone reads it after that.
type Op struct {
	s                     *Scope
	start                 time.Time
	method, tool, version string
	parent, state         string // what to pass on without tracing

	// Tracing: sc is the span's own context (valid only when traced);
	// the rest is set only for a sampled span.
	sc       spanContext
	parentID [8]byte      // zero for a root span
	link     *spanContext // the HTTP header's context when _meta gave the parent
	name     string       // params.name (the tool or the prompt)
	id       string       // the raw JSON-RPC id

	// Guarded by mu until End; End sets ended, after which nothing changes
	// them (Fail and SetSession are then ignored) and the exporter reads
	// them without the lock.
	mu      sync.Mutex
	session string
	errType string
	errMsg  string
	ended   bool
	endNs   int64 // unix nanoseconds
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
	tr := s.t.tracer
	if tr == nil {
		return o
	}
	var parent spanContext
	if r.MetaParent != "" {
		parent, _ = parseTraceparent(r.MetaParent, r.MetaState)
	}
	if r.HeaderParent != "" {
		if hdr, ok := parseTraceparent(r.HeaderParent, r.HeaderState); ok {
			if parent.valid() {
				o.link = &hdr // rare: both carried a context
			} else {
				parent = hdr
			}
		}
	}
	tr.start(o, &parent)
	if o.sc.sampled() {
		o.name, o.session = r.Name, r.Session
		if len(r.ID) > 0 {
			o.id = string(r.ID) // r.ID may be a reused buffer
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
	if o == nil {
		return "", ""
	}
	if !o.sc.valid() {
		return o.parent, o.state
	}
	return o.sc.traceparent(), o.sc.state
}

// SetSession names the 2025 session the request belongs to, when it is
// known only after the request (an initialize minting one).
func (o *Op) SetSession(id string) {
	if o != nil && o.sc.sampled() && id != "" {
		o.mu.Lock()
		if !o.ended {
			o.session = id
		}
		o.mu.Unlock()
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
	if o.errType == "" && !o.ended {
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

// End records the duration and ends the span: a sampled span is queued for
// export, never waiting for the network (a full queue drops it). Calls
// after the first do nothing.
func (o *Op) End() {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.ended {
		o.mu.Unlock()
		return // a second End would count twice and race with the exporter
	}
	now := time.Now()
	o.ended, o.endNs = true, now.UnixNano()
	errType := o.errType
	o.mu.Unlock()
	if o.s.metrics() {
		o.s.observe(o.method, o.tool, o.version, errType, now.Sub(o.start).Seconds())
	}
	if o.sc.sampled() {
		o.s.t.tracer.batch.enqueue(o)
	}
}

// WithTrace is WithTraceContext for a relay: the edited message, read, or
// m itself when it cannot be edited (it then travels as sent). The common
// edit — members added to an existing _meta object — moves m's spans
// instead of reading the message again (wire.Message.Shifted, checked
// against Parse by its fuzz target): on every traced request, the second
// parse cost as much as the rest of the span.
func WithTrace(m *wire.Message, parent, state string) *wire.Message {
	edits, add, ok := traceEdits(m, parent, state)
	if !ok {
		return m
	}
	if len(edits) == 0 && m.Meta.Present() && m.Raw[m.Meta.Start] == '{' {
		raw := wire.InsertFields(m.Raw, m.Meta, add)
		out := m.Shifted(raw, m.Meta.Start+1, len(raw)-len(m.Raw))
		return &out
	}
	var out wire.Message
	if wire.Parse(applyTrace(m, edits, add), &out) != nil {
		return m
	}
	return &out
}

// WithTraceContext returns m with params._meta.traceparent (and tracestate,
// when given) set: replaced where present, added where not. It returns nil
// when _meta holds the keys in a form it cannot edit unambiguously
// (duplicated, escaped): the message then travels as the client sent it.
func WithTraceContext(m *wire.Message, parent, state string) []byte {
	edits, add, ok := traceEdits(m, parent, state)
	if !ok {
		return nil
	}
	return applyTrace(m, edits, add)
}

// traceEdits returns how to put the trace context into m's _meta: edits
// of the keys it has, and the members to add for those it lacks; ok is
// false when there is nothing to do or the edit would be ambiguous.
func traceEdits(m *wire.Message, parent, state string) (edits []wire.Edit, add []byte, ok bool) {
	for _, f := range [...]struct{ key, val string }{{"traceparent", parent}, {"tracestate", state}} {
		if f.val == "" {
			continue
		}
		if sp, ok := wire.Field(m.Raw, m.Meta, f.key); ok {
			edits = append(edits, wire.Edit{Span: sp, Value: wire.AppendString(nil, f.val)})
			continue
		}
		if m.Meta.Present() && ambiguous(m.Bytes(m.Meta), f.key) {
			return nil, nil, false // there, but not in one plain spelling
		}
		if add == nil {
			// Room for both members as they usually are (no escapes).
			add = make([]byte, 0, 2*len(`"tracestate":"",`)+len(parent)+len(state))
		} else {
			add = append(add, ',')
		}
		add = wire.AppendString(append(wire.AppendString(add, f.key), ':'), f.val)
	}
	return edits, add, len(edits)+len(add) > 0
}

// applyTrace makes the edited message.
func applyTrace(m *wire.Message, edits []wire.Edit, add []byte) []byte {
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

// ambiguous reports whether the _meta object meta may hold key in a
// spelling a decoder takes for it — encoding/json matches keys by case
// folding, Unicode's included — so that adding the plain key would make two
// of it: key (without its first letter, which an escape may stand for) in
// any ASCII case, any escape, or the two non-ASCII letters that fold to
// ASCII ones ('ſ' to s, the Kelvin sign to k). Refusing is safe: the message
// then travels as the client sent it.
func ambiguous(meta []byte, key string) bool {
	return containsFold(meta, key[1:]) || bytes.Contains(meta, []byte(`\u`)) ||
		bytes.Contains(meta, []byte("\u017f")) || bytes.Contains(meta, []byte("\u212a"))
}

// containsFold reports whether b contains s (lower-case ASCII letters) in
// any ASCII case. It jumps between the places s's first letter occurs, in
// either case, rather than comparing at every byte: _meta objects of the
// 2026-07-28 envelope are a few hundred bytes, on every traced request.
func containsFold(b []byte, s string) bool {
	lo, up := s[0], s[0]-'a'+'A'
	nextLo, nextUp := bytes.IndexByte(b, lo), bytes.IndexByte(b, up)
	for nextLo >= 0 || nextUp >= 0 {
		i := nextLo
		if i < 0 || (nextUp >= 0 && nextUp < i) {
			i = nextUp
		}
		if len(b)-i < len(s) {
			return false
		}
		if bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
		// Advance past i whichever of the two it was.
		if i == nextLo {
			if j := bytes.IndexByte(b[i+1:], lo); j >= 0 {
				nextLo = i + 1 + j
			} else {
				nextLo = -1
			}
		} else {
			if j := bytes.IndexByte(b[i+1:], up); j >= 0 {
				nextUp = i + 1 + j
			} else {
				nextUp = -1
			}
		}
	}
	return false
}
