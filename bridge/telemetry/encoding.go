package telemetry

// An otlpEncoding is one of OTLP/HTTP's two wire forms of the trace
// export: how a batch becomes a request body and how the collector's
// answer is read back. The exporter holds one, chosen once from
// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, and never asks which it is.
//
// Both are written by hand (otlpproto.go, otlpjson.go, partial.go): the
// OpenTelemetry SDK's span path cost 6.0 µs a span here against 0.8 µs,
// and the bridge's cost target for tracing on is ≥ 90% of the calls/s
// with it off (docs/benchmarks.md). What keeps the hand-written encoders
// honest is encoding_test.go: golden batches compared with what the
// official protobuf bindings (go.opentelemetry.io/proto/otlp, a test-only
// import) produce and decode.
type otlpEncoding interface {
	// appendRequest appends an ExportTraceServiceRequest holding spans,
	// under one resource (res) and the bridge's instrumentation scope.
	appendRequest(b []byte, res []pair, scopeVersion string, spans []*spanRecord) []byte
	// parseResponse reads an ExportTraceServiceResponse's partial success.
	parseResponse(b []byte) (partialSuccess, error)
	// contentType is the request's Content-Type.
	contentType() string
}

func encodingFor(cfg exportConfig) otlpEncoding {
	if cfg.json {
		return jsonEncoding{}
	}
	return protoEncoding{}
}

// protoEncoding is http/protobuf, the OTLP default.
type protoEncoding struct{}

func (protoEncoding) appendRequest(b []byte, res []pair, scopeVersion string, spans []*spanRecord) []byte {
	p := pb{b: b}
	appendProtoRequest(&p, res, scopeVersion, spans)
	return p.b
}

func (protoEncoding) parseResponse(b []byte) (partialSuccess, error) { return parseProtoResponse(b) }
func (protoEncoding) contentType() string                            { return "application/x-protobuf" }

// jsonEncoding is http/json (the protobuf JSON mapping, with OTLP's
// exceptions: hex ids, integer enums).
type jsonEncoding struct{}

func (jsonEncoding) appendRequest(b []byte, res []pair, scopeVersion string, spans []*spanRecord) []byte {
	return appendJSONRequest(b, res, scopeVersion, spans)
}

func (jsonEncoding) parseResponse(b []byte) (partialSuccess, error) { return parseJSONResponse(b) }
func (jsonEncoding) contentType() string                            { return "application/json" }
