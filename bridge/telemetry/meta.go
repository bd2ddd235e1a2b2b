package telemetry

import "github.com/mcp-bridge/mcp-bridge/bridge/wire"

// MetaContext returns the W3C trace context a request carries in
// params._meta (semconv: context propagation keys are written unprefixed,
// per SEP-414).
func MetaContext(m *wire.Message) (parent, state string) {
	if !m.Meta.Present() {
		return "", ""
	}
	parent, _ = wire.StringField(m.Raw, m.Meta, "traceparent")
	state, _ = wire.StringField(m.Raw, m.Meta, "tracestate")
	return parent, state
}
