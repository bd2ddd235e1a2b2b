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
}

var recordPool = sync.Pool{New: func() any { return new(spanRecord) }}

// release clears r (nothing of its span may show in the next one) and
// puts it back. Only the record's owner after End calls it, once.
func (r *spanRecord) release() {
	*r = spanRecord{}
	recordPool.Put(r)
}

// Begin starts observing req. It returns nil (a valid, inert Op) when s is.
func (s *Scope) Begin(req *Request) *Op {
	if s == nil {
		return nil
	}
	r := recordPool.Get().(*spanRecord)
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
	var parent spanContext
	if req.MetaParent != "" {
		parent, _ = parseTraceparent(req.MetaParent, req.MetaState)
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
	r := o.r
	switch {
	case r == nil:
		return "", ""
	case !r.sc.valid():
		return r.parent, r.state
	}
	b := r.sc.appendTraceparent(buf[:0])
	return unsafe.String(&b[0], len(b)), r.sc.state
}

// Relay returns the message to send on for the request o observes: m with
// params._meta carrying Propagate's context (edited in place, see
// WithTrace), or m as it is when it holds that context already. meta is
// what m's _meta carries (ReadMeta). The traceparent is formatted on the
// stack: this runs on every traced request.
func (o *Op) Relay(m *wire.Message, meta MetaTrace) *wire.Message {
	var buf [traceparentLen]byte
	parent, state := o.propagate(&buf)
	if parent == "" || parent == meta.Parent && state == meta.State {
		return m // nothing the peer does not have already
	}
	return withTrace(m, parent, state, &meta)
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

// WithTrace is WithTraceContext for a relay: it edits *m in place (m then
// holds a new Raw; the bytes it held before are left as they were) and
// returns m, also when it cannot be edited (it then travels as sent). The
// common edits — members added to an existing _meta object, or the values
// of the keys it has replaced — move m's spans instead of reading the
// message again (wire.Message.Shifted; FuzzWithTraceContext checks the
// result against Parse): on every traced request, the second parse cost as
// much as the rest of the span.
func WithTrace(m *wire.Message, parent, state string) *wire.Message {
	return withTrace(m, parent, state, nil)
}

// withTrace is WithTrace with what ReadMeta read of m's _meta, if it did
// (nil: nothing known).
func withTrace(m *wire.Message, parent, state string, mt *MetaTrace) *wire.Message {
	var room [addRoom]byte
	me, add, ok := traceEdits(m, parent, state, room[:0], mt)
	edits := me.e[:me.n]
	switch {
	case !ok:
		return m
	case len(edits) == 0 && m.Meta.Present() && m.Raw[m.Meta.Start] == '{':
		raw := wire.InsertFields(m.Raw, m.Meta, add)
		*m = m.Shifted(raw, m.Meta.Start+1, len(raw)-len(m.Raw))
		return m
	case len(add) == 0:
		// Each value is one token between others: the spans after it
		// move, those around it grow, by the change in its length. From
		// the last edit back, so that each offset is still the original.
		raw := wire.Splice(m.Raw, edits...) // sorts edits
		out := *m
		for i := len(edits) - 1; i >= 0; i-- {
			e := edits[i]
			out = out.Shifted(raw, e.Span.End, len(e.Value)-(e.Span.End-e.Span.Start))
		}
		*m = out
		return m
	}
	var out wire.Message
	if wire.Parse(applyTrace(m, edits, add), &out) != nil {
		return m
	}
	*m = out
	return m
}

// addRoom is the stack room WithTrace gives the members it adds, or the
// values it replaces: both as they usually are (a 55-byte traceparent, a
// short tracestate, no escapes).
const addRoom = 2*len(`"tracestate":"",`) + traceparentLen + 64

// WithTraceContext returns m with params._meta.traceparent (and tracestate,
// when given) set: replaced where present, added where not. It returns nil
// when _meta holds the keys in a form it cannot edit unambiguously
// (duplicated, escaped): the message then travels as the client sent it.
func WithTraceContext(m *wire.Message, parent, state string) []byte {
	me, add, ok := traceEdits(m, parent, state, nil, nil)
	if !ok {
		return nil
	}
	return applyTrace(m, me.e[:me.n], add)
}

// metaEdits are the values of _meta keys to replace: at most the two of
// the trace context, held by value so that they can live on the stack.
type metaEdits struct {
	n int
	e [2]wire.Edit
}

// traceEdits returns how to put the trace context into m's _meta: edits
// of the keys it has, and the members to add for those it lacks; ok is
// false when there is nothing to do or the edit would be ambiguous. The new
// values and the members are appended to room (which may be nil), so that a
// caller can give them stack space. mt, if not nil, is what ReadMeta read
// of m: that _meta holds neither key in any spelling (both are added), or
// where the keys' values are (no walk of _meta here).
func traceEdits(m *wire.Message, parent, state string, room []byte, mt *MetaTrace) (me metaEdits, add []byte, ok bool) {
	if m.Meta.Present() && m.Raw[m.Meta.Start] != '{' {
		return metaEdits{}, nil, false // a _meta that is not an object: not ours to fix
	}
	// One pass tells the usual _meta, which has neither key, from one
	// that needs the look at each.
	known := mt.of(m)
	look := !(known && mt.absent) && m.Meta.Present() && mayTrace(m.Bytes(m.Meta))
	walked := look && known && mt.walked
	found := [...]struct {
		sp wire.Span
		ok bool
	}{{}, {}}
	if walked {
		found[0].sp, found[0].ok, found[1].sp, found[1].ok = mt.pSpan, mt.pOK, mt.sSpan, mt.sOK
	}
	fields := [...]struct{ key, quoted, val string }{
		{"traceparent", `"traceparent":`, parent}, {"tracestate", `"tracestate":`, state}}
	var missing [len(fields)]bool
	// The replaced values first, then the added members after them in
	// room: add grows at room's end, and nothing may be appended to room
	// after it (the two would share bytes; FuzzWithTraceContext found a
	// tracestate value written over an added traceparent).
	for i, f := range fields {
		if f.val == "" {
			continue
		}
		// Not ambiguous means not there in any spelling (see ambiguous),
		// without walking _meta.
		sp, ok := found[i].sp, found[i].ok
		if !ok && (!look || !ambiguous(m.Bytes(m.Meta), f.key)) {
			missing[i] = true
			continue
		}
		if !ok && !walked {
			sp, ok = wire.Field(m.Raw, m.Meta, f.key)
		}
		if !ok {
			return metaEdits{}, nil, false // there, but not in one plain spelling
		}
		at := len(room)
		room = wire.AppendString(room, f.val)
		me.e[me.n] = wire.Edit{Span: sp, Value: room[at:len(room):len(room)]}
		me.n++
	}
	adding := false
	for i, f := range fields {
		if !missing[i] {
			continue
		}
		if !adding {
			adding = true
			add = room[len(room):]
		} else {
			add = append(add, ',')
		}
		add = wire.AppendString(append(add, f.quoted...), f.val)
	}
	return me, add, me.n > 0 || adding
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
