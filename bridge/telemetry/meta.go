package telemetry

import (
	"bytes"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A MetaTrace is the W3C trace context a request carries in params._meta
// (semconv: context propagation keys are written unprefixed, per SEP-414),
// as ReadMeta found it.
type MetaTrace struct {
	Parent, State string

	// absent: ReadMeta found that _meta, an object, holds neither
	// traceparent nor tracestate in any spelling a decoder accepts, so
	// the edit that adds them need not look again. (The zero value, as
	// from a caller that did not read m, makes it look.)
	absent bool
}

// ReadMeta reads the trace context of m's params._meta. One pass over
// _meta settles the usual request, whose _meta has neither key: on every
// traced request, the walks this saves cost as much as the rest of the
// span's request path.
func ReadMeta(m *wire.Message) MetaTrace {
	if !m.Meta.Present() {
		return MetaTrace{}
	}
	meta := m.Bytes(m.Meta)
	if !mayTrace(meta) {
		return MetaTrace{absent: meta[0] == '{'}
	}
	var t MetaTrace
	if mayHold(meta, "traceparent") {
		t.Parent, _ = wire.StringField(m.Raw, m.Meta, "traceparent")
	}
	if mayHold(meta, "tracestate") {
		t.State, _ = wire.StringField(m.Raw, m.Meta, "tracestate")
	}
	return t
}

// MetaContext returns the W3C trace context a request carries in
// params._meta: ReadMeta's Parent and State.
func MetaContext(m *wire.Message) (parent, state string) {
	t := ReadMeta(m)
	return t.Parent, t.State
}

// mayTrace reports whether the _meta object meta may spell traceparent or
// tracestate in any form a decoder takes for them (see ambiguous): each
// such spelling holds "race" in some ASCII case — r, a, c and e have no
// non-ASCII letter folding to them — unless a \u escape spells a letter.
// So when this is false, neither key is there.
func mayTrace(meta []byte) bool {
	return containsFold(meta, "race") || bytes.Contains(meta, []byte(`\u`))
}

// mayHold reports whether wire.Field can find key in the _meta object
// meta: it finds a key only in its plain spelling, so not where its bytes
// are nowhere. Then Field's walk of the whole object (2026-07-28's _meta
// carries the client's info and capabilities) would find nothing.
func mayHold(meta []byte, key string) bool { return bytes.Contains(meta, []byte(key)) }
