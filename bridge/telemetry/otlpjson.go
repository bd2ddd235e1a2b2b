package telemetry

import (
	"strconv"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// appendJSONRequest appends the OTLP/HTTP JSON form of the request
// appendProtoRequest writes. OTLP spec: "traceId and spanId ... MUST be
// represented as case-insensitive hex-encoded strings" (not base64),
// "Values of enum fields MUST be encoded as integer values", keys are
// lowerCamelCase, and 64-bit integers are decimal strings (the protobuf
// JSON mapping).
func appendJSONRequest(b []byte, res []pair, scopeVersion string, spans []*spanRecord) []byte {
	b = append(b, `{"resourceSpans":[{"resource":{"attributes":[`...)
	for i, a := range res {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONAttr(b, a.key, a.value)
	}
	b = append(b, `]},"scopeSpans":[{"scope":{"name":`...)
	b = wire.AppendString(b, scopeName)
	if scopeVersion != "" {
		b = append(b, `,"version":`...)
		b = wire.AppendString(b, scopeVersion)
	}
	b = append(b, `},"spans":[`...)
	for i, o := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONSpan(b, o)
	}
	return append(b, `]}]}]}`...)
}

func appendJSONAttr(b []byte, k, v string) []byte {
	b = append(b, `{"key":`...)
	b = wire.AppendString(b, k)
	b = append(b, `,"value":{"stringValue":`...)
	b = wire.AppendString(b, v)
	return append(b, `}}`...)
}

// appendJSONContext writes the members a span and a link share: their
// trace and span ids and trace state.
func appendJSONContext(b []byte, sc *spanContext) []byte {
	b = append(b, `"traceId":"`...)
	b = appendHex(b, sc.traceID[:])
	b = append(b, `","spanId":"`...)
	b = appendHex(b, sc.spanID[:])
	b = append(b, '"')
	if sc.state != "" {
		b = append(b, `,"traceState":`...)
		b = wire.AppendString(b, sc.state)
	}
	return b
}

func appendJSONSpan(b []byte, o *spanRecord) []byte {
	b = appendJSONContext(append(b, '{'), &o.sc)
	hasParent := o.parentID != ([8]byte{})
	if hasParent {
		b = append(b, `,"parentSpanId":"`...)
		b = appendHex(b, o.parentID[:])
		b = append(b, '"')
	}
	b = append(b, `,"flags":`...)
	b = strconv.AppendUint(b, uint64(otlpFlags(o.sc.flags, hasParent)), 10)
	b = append(b, `,"name":`...)
	b = wire.AppendString(b, o.spanName())
	b = append(b, `,"kind":`...)
	b = strconv.AppendUint(b, o.kind(), 10)
	b = append(b, `,"startTimeUnixNano":"`...)
	b = strconv.AppendInt(b, o.start.UnixNano(), 10)
	b = append(b, `","endTimeUnixNano":"`...)
	b = strconv.AppendInt(b, o.endNs, 10)
	b = append(b, `","attributes":[`...)
	first := true
	o.eachAttr(func(k, v string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONAttr(b, k, v)
	})
	b = append(b, ']')
	if o.hasLink {
		b = appendJSONContext(append(b, `,"links":[{`...), &o.link)
		b = append(b, `,"flags":`...)
		b = strconv.AppendUint(b, uint64(otlpFlags(o.link.flags, true)), 10)
		b = append(b, `}]`...)
	}
	if o.errType != "" {
		b = append(b, `,"status":{"code":2`...)
		if o.errMsg != "" {
			b = append(b, `,"message":`...)
			b = wire.AppendString(b, o.errMsg)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}
