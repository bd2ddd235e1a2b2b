package telemetry

import (
	"bytes"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// MetaContext returns the W3C trace context a request carries in
// params._meta (semconv: context propagation keys are written unprefixed,
// per SEP-414).
func MetaContext(m *wire.Message) (parent, state string) {
	if !m.Meta.Present() {
		return "", ""
	}
	meta := m.Bytes(m.Meta)
	if mayHold(meta, "traceparent") {
		parent, _ = wire.StringField(m.Raw, m.Meta, "traceparent")
	}
	if mayHold(meta, "tracestate") {
		state, _ = wire.StringField(m.Raw, m.Meta, "tracestate")
	}
	return parent, state
}

// mayHold reports whether wire.Field can find key in the _meta object
// meta: it finds a key only in its plain spelling, so not where its bytes
// are nowhere. Then Field's walk of the whole object (2026-07-28's _meta
// carries the client's info and capabilities) would find nothing: on every
// traced request, that walk cost more than the rest of the edit.
func mayHold(meta []byte, key string) bool { return bytes.Contains(meta, []byte(key)) }
