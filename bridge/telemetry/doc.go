// Package telemetry is what serve and connect report to: Prometheus metrics
// named after the OpenTelemetry MCP semantic conventions, OTLP traces
// configured by the standard OTEL_* environment variables, and the W3C trace
// context MCP carries in params._meta.
//
// A nil *Telemetry, and a nil *Scope, is telemetry switched off: every
// method is then a no-op that does not allocate, so the request path of a
// bridge without --metrics-listen or OTEL_* settings costs one nil check.
//
// HTTPObserver is the observation of an endpoint's HTTP requests (status,
// bytes, open streams, one Op per request, the access log) that serve's
// Handler wraps its requests in.
//
// It imports neither serve nor connect; both import it.
package telemetry
