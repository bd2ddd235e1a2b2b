package translate

import "github.com/mcp-bridge/mcp-bridge/bridge/wire"

// EnvelopeKeys are the _meta keys of the 2026-07-28 request envelope, which
// a legacy peer must not see (a dual-era server would read the request as
// modern).
var EnvelopeKeys = []string{wire.MetaProtocolVersion, wire.MetaClientCapabilities, wire.MetaClientInfo, wire.MetaLogLevel}

// EnvelopeFields builds the members of a 2026-07-28 request's _meta from a
// legacy session's state: protocolVersion and clientCapabilities "MUST be
// included on every request"; clientInfo SHOULD (basic/index §_meta); the
// log level when the session set one.
func EnvelopeFields(version string, caps, info []byte, logLevel string) []byte {
	if len(caps) == 0 {
		caps = []byte("{}")
	}
	f := wire.AppendString([]byte(`"`+wire.MetaProtocolVersion+`":`), version)
	f = append(append(f, `,"`+wire.MetaClientCapabilities+`":`...), caps...)
	if len(info) > 0 {
		f = append(append(f, `,"`+wire.MetaClientInfo+`":`...), info...)
	}
	if logLevel != "" {
		f = wire.AppendString(append(f, `,"`+wire.MetaLogLevel+`":`...), logLevel)
	}
	return f
}

// ToLegacy returns m as a legacy peer must see it: under id and without
// the envelope keys. Other _meta (progressToken, trace context) stays.
func ToLegacy(m *wire.Message, id []byte) ([]byte, error) {
	out := wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: id})
	if !m.Meta.Present() {
		return out, nil
	}
	var om wire.Message
	if err := wire.Parse(out, &om); err != nil {
		return nil, err
	}
	return wire.WithoutFields(out, om.Meta, EnvelopeKeys...), nil
}

// defaultClientInfo stands in for a modern peer that sent no clientInfo,
// which initialize requires.
var defaultClientInfo = []byte(`{"name":"mcp-bridge","version":"unknown"}`)

// InitializeParams builds the params of the initialize request that opens
// a legacy session for the modern peer of request m: the newest handshake
// version, and the capabilities and clientInfo of m's envelope.
func InitializeParams(m *wire.Message) []byte {
	caps := []byte("{}")
	if sp, ok := wire.Field(m.Raw, m.Meta, wire.MetaClientCapabilities); ok && m.Raw[sp.Start] == '{' {
		caps = m.Bytes(sp)
	}
	info := defaultClientInfo
	if sp, ok := wire.Field(m.Raw, m.Meta, wire.MetaClientInfo); ok && m.Raw[sp.Start] == '{' {
		info = m.Bytes(sp)
	}
	params := wire.AppendString([]byte(`{"protocolVersion":`), Legacy)
	params = append(append(params, `,"capabilities":`...), caps...)
	params = append(append(params, `,"clientInfo":`...), info...)
	return append(params, '}')
}
