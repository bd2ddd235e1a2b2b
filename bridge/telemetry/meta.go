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

	// What ReadMeta's one walk of _meta found, when it walked: the
	// spans of the two values, so that Relay's edit of the same message
	// need not walk again (a traced client sends both keys; the walks
	// cost more than the rest of the span).
	walked       bool
	pSpan, sSpan wire.Span
	pOK, sOK     bool

	// raw, rawLen and meta name the message ReadMeta read: absent and
	// the spans are trusted only for it.
	raw    *byte
	rawLen int
	meta   wire.Span
}

// of reports whether t describes m: ReadMeta read m, whose Raw and _meta
// are unchanged since.
func (t *MetaTrace) of(m *wire.Message) bool {
	return t != nil && t.raw != nil && len(m.Raw) == t.rawLen && len(m.Raw) > 0 && &m.Raw[0] == t.raw && m.Meta == t.meta
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
	t := MetaTrace{raw: &m.Raw[0], rawLen: len(m.Raw), meta: m.Meta}
	if meta[0] != '{' {
		return t
	}
	if !mayTrace(meta) {
		t.absent = true
		return t
	}
	t.walked = true
	t.pSpan, t.pOK, t.sSpan, t.sOK = wire.Field2(m.Raw, m.Meta, "traceparent", "tracestate")
	if t.pOK {
		t.Parent, _ = wire.StringValue(m.Raw, t.pSpan)
	}
	if t.sOK {
		t.State, _ = wire.StringValue(m.Raw, t.sSpan)
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
