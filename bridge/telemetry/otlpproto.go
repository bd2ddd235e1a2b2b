package telemetry

import "unicode/utf8"

// The OTLP protobuf encoding of ExportTraceServiceRequest, written by hand
// (opentelemetry-proto v1: collector/trace/v1, trace/v1, common/v1,
// resource/v1). Field numbers are those of the .proto files; proto3 omits
// fields at their default value.

// pb appends protobuf fields to a buffer reused across batches.
type pb struct{ b []byte }

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func (p *pb) varint(v uint64) {
	for v >= 0x80 {
		p.b = append(p.b, byte(v)|0x80)
		v >>= 7
	}
	p.b = append(p.b, byte(v))
}

func (p *pb) tag(field, wt int) { p.varint(uint64(field)<<3 | uint64(wt)) }

// str writes a string field. proto3 strings are UTF-8 (decoders refuse
// anything else, losing the whole batch), and a tool name or an error
// message comes from a peer: invalid bytes become U+FFFD.
func (p *pb) str(field int, s string) {
	if s != "" {
		p.strAlways(field, s)
	}
}

// strAlways writes s even when empty: a oneof member (AnyValue's
// string_value) is present at its default value too.
func (p *pb) strAlways(field int, s string) {
	s = toValidUTF8(s)
	p.tag(field, wireBytes)
	p.varint(uint64(len(s)))
	p.b = append(p.b, s...)
}

// toValidUTF8 replaces each byte that is not UTF-8 with U+FFFD, as the
// JSON encoder does, so that both encodings carry the same text.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

func (p *pb) bytes(field int, b []byte) {
	p.tag(field, wireBytes)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

func (p *pb) uint(field int, v uint64) {
	if v != 0 {
		p.tag(field, wireVarint)
		p.varint(v)
	}
}

func (p *pb) fixed64(field int, v uint64) {
	p.tag(field, wireFixed64)
	p.b = append(p.b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

func (p *pb) fixed32(field int, v uint32) {
	if v != 0 {
		p.tag(field, wireFixed32)
		p.b = append(p.b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
}

// open starts an embedded message, reserving one byte for its length;
// close writes the length, moving the body when it needs more bytes
// (most span parts are under 128 bytes and never move).
func (p *pb) open(field int) int {
	p.tag(field, wireBytes)
	p.b = append(p.b, 0)
	return len(p.b)
}

func (p *pb) close(start int) {
	n := len(p.b) - start
	if n < 0x80 {
		p.b[start-1] = byte(n)
		return
	}
	extra := 0
	for v := n >> 7; v > 0; v >>= 7 {
		extra++
	}
	p.b = append(p.b, make([]byte, extra)...)
	copy(p.b[start+extra:], p.b[start:start+n])
	i := start - 1
	for v := uint64(n); ; i++ {
		if v < 0x80 {
			p.b[i] = byte(v)
			break
		}
		p.b[i] = byte(v) | 0x80
		v >>= 7
	}
}

// attr writes a KeyValue with a string AnyValue (KeyValue: key = 1,
// value = 2; AnyValue: string_value = 1).
func (p *pb) attr(field int, key, value string) { p.attrKey(field, toValidUTF8(key), value) }

// attrKey is attr for a key known to be UTF-8 (the bridge's own attribute
// names: a span has a dozen, and checking each again costs more than
// writing it).
func (p *pb) attrKey(field int, key, value string) {
	kv := p.open(field)
	if key != "" {
		p.tag(1, wireBytes)
		p.varint(uint64(len(key)))
		p.b = append(p.b, key...)
	}
	v := p.open(2)
	p.strAlways(1, value)
	p.close(v)
	p.close(kv)
}

// OTLP span flags: the W3C flags in the low byte, and whether the parent
// (or the linked span) is remote — "SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
// = 0x00000100; SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK = 0x00000200".
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

func otlpFlags(flags byte, remote bool) uint32 {
	f := uint32(flags) | spanFlagsHasIsRemote
	if remote {
		f |= spanFlagsIsRemote
	}
	return f
}

// Span.SpanKind and Status.StatusCode values.
const (
	kindServer      = 2
	kindClient      = 3
	statusCodeError = 2
)

// appendProtoRequest appends an ExportTraceServiceRequest (resource_spans
// = 1) with one ResourceSpans (resource = 1, scope_spans = 2) holding one
// ScopeSpans (scope = 1, spans = 2) of spans.
func appendProtoRequest(p *pb, res []pair, scopeVersion string, spans []*spanRecord) {
	rs := p.open(1)
	r := p.open(1) // Resource: attributes = 1
	for _, a := range res {
		p.attr(1, a.key, a.value)
	}
	p.close(r)
	ss := p.open(2)
	sc := p.open(1) // InstrumentationScope: name = 1, version = 2
	p.str(1, scopeName)
	p.str(2, scopeVersion)
	p.close(sc)
	for _, o := range spans {
		appendProtoSpan(p, o)
	}
	p.close(ss)
	p.close(rs)
}

// scopeName is the instrumentation scope of the bridge's spans.
const scopeName = "github.com/mcp-bridge/mcp-bridge"

// appendProtoSpan writes o as ScopeSpans.spans (2). Span: trace_id = 1,
// span_id = 2, trace_state = 3, parent_span_id = 4, name = 5, kind = 6,
// start_time_unix_nano = 7, end_time_unix_nano = 8, attributes = 9,
// links = 13, status = 15, flags = 16.
func appendProtoSpan(p *pb, o *spanRecord) {
	s := p.open(2)
	p.bytes(1, o.sc.traceID[:])
	p.bytes(2, o.sc.spanID[:])
	p.str(3, o.sc.state)
	if o.parentID != ([8]byte{}) {
		p.bytes(4, o.parentID[:])
	}
	p.fixed32(16, otlpFlags(o.sc.flags, o.parentID != ([8]byte{})))
	p.spanName(o)
	p.uint(6, o.kind())
	p.fixed64(7, uint64(o.start.UnixNano()))
	p.fixed64(8, uint64(o.endNs))
	o.eachAttr(func(k, v string) { p.attrKey(9, k, v) })
	if o.hasLink {
		l := p.open(13) // Link: trace_id = 1, span_id = 2, trace_state = 3, flags = 6
		p.bytes(1, o.link.traceID[:])
		p.bytes(2, o.link.spanID[:])
		p.str(3, o.link.state)
		p.fixed32(6, otlpFlags(o.link.flags, true))
		p.close(l)
	}
	if o.errType != "" {
		st := p.open(15) // Status: message = 2, code = 3
		p.str(2, o.errMsg)
		p.uint(3, statusCodeError)
		p.close(st)
	}
	p.close(s)
}

// spanName is semconv's "{mcp.method.name} {target}", the target being the
// tool or the prompt.
func (o *spanRecord) spanName() string {
	if o.hasTarget() {
		return o.method + " " + o.name
	}
	return o.method
}

func (o *spanRecord) hasTarget() bool {
	return o.name != "" && (o.method == "tools/call" || o.method == "prompts/get")
}

// spanName writes Span.name (5) without building the string: it is
// spanName's, as each part is valid UTF-8 (or made so byte by byte, which
// the space between them does not change).
func (p *pb) spanName(o *spanRecord) {
	if !o.hasTarget() {
		p.str(5, o.method)
		return
	}
	m, n := toValidUTF8(o.method), toValidUTF8(o.name)
	p.tag(5, wireBytes)
	p.varint(uint64(len(m) + 1 + len(n)))
	p.b = append(append(append(p.b, m...), ' '), n...)
}

func (o *spanRecord) kind() uint64 {
	if o.s.side == Client {
		return kindClient
	}
	return kindServer
}

// eachAttr calls f with each attribute of the ended span, in a fixed
// order.
func (o *spanRecord) eachAttr(f func(k, v string)) {
	f("mcp.method.name", o.method)
	f("network.transport", "tcp")
	f("network.protocol.name", "http")
	switch o.method {
	case "tools/call":
		f("gen_ai.tool.name", o.name)
		f("gen_ai.operation.name", "execute_tool")
	case "prompts/get":
		f("gen_ai.prompt.name", o.name)
	}
	if id := jsonrpcID(o.id); id != "" {
		f("jsonrpc.request.id", id)
	}
	if o.version != "" {
		f("mcp.protocol.version", o.version)
	}
	if o.session != "" {
		f("mcp.session.id", o.session)
	}
	if o.s.name != "" {
		f("mcp.bridge.server", o.s.name)
	}
	if o.errType != "" {
		f("error.type", o.errType)
		// A JSON-RPC error code (negative) is also the response status.
		if o.errType[0] == '-' && isDigits(o.errType[1:]) {
			f("rpc.response.status_code", o.errType)
		}
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
