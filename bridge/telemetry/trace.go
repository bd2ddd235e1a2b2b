package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracingFromEnv reports whether the OTEL_* environment asks for traces:
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the SDK is not disabled
// (OTEL_SDK_DISABLED=true) and OTEL_TRACES_EXPORTER, if set, names otlp.
// Without one the bridge creates no span at all.
func TracingFromEnv(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" && e != "otlp" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// initTracing builds the OTLP/HTTP exporter and the tracer provider. Both
// read the rest of the standard variables themselves: endpoint, headers,
// timeout, TLS files, compression (OTEL_EXPORTER_OTLP_*), sampler
// (OTEL_TRACES_SAMPLER[_ARG]), batching (OTEL_BSP_*), service name and
// resource attributes (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
func (t *Telemetry) initTracing(ctx context.Context, opts Options) error {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcp-bridge"), attribute.String("service.version", opts.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		t.log.Warn().Err(err).Msg("telemetry: OTEL_RESOURCE_ATTRIBUTES partly unreadable")
	}
	// Export failures are the SDK's to retry; they are worth a warning,
	// not a crash, and must not go to connect's stdout.
	log := t.log
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn().Err(err).Msg("telemetry: exporting spans") }))
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer("github.com/mcp-bridge/mcp-bridge", trace.WithInstrumentationVersion(opts.Version))
	return nil
}

// traceCarrier is a propagation.TextMapCarrier over the two W3C fields
// (MCP carries them in params._meta, HTTP in headers), without a map.
type traceCarrier struct{ parent, state string }

func (c *traceCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *traceCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *traceCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

var w3c propagation.TraceContext

// remote returns the span context a traceparent/tracestate pair names
// (invalid if it names none or is malformed).
func remote(parent, state string) trace.SpanContext {
	if parent == "" {
		return trace.SpanContext{}
	}
	c := traceCarrier{parent, state}
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), &c))
}
