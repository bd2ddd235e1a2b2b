// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// the requests the bridge's exporter sends — protobuf with the reference
// Go bindings (go.opentelemetry.io/proto/otlp), JSON per the OTLP JSON
// mapping — and keeps them. It is imported by tests only, so those
// bindings never reach the binary. Requests decode as TracesData, whose
// wire form is ExportTraceServiceRequest's (resource_spans = 1), so that
// not even the tests link the gRPC collector stubs.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// A Receiver collects the spans exported to URL.
type Receiver struct {
	URL string

	mu       sync.Mutex
	requests []*tracepb.TracesData
	headers  []http.Header
	spans    []*tracepb.Span
}

// Start serves a Receiver on loopback until the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// ServeHTTP receives one export at /v1/traces; a test may wrap it to
// inject faults.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = io.LimitReader(req.Body, 64<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	msg := &tracepb.TracesData{}
	switch ct {
	case "application/x-protobuf":
		err = proto.Unmarshal(b, msg)
	case "application/json":
		msg, err = DecodeJSON(b)
	default:
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, msg)
	r.headers = append(r.headers, req.Header.Clone())
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	if ct == "application/json" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
		return
	}
	// An empty ExportTraceServiceResponse: full success.
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Requests returns the export requests received so far, decoded, and the
// HTTP headers each came with.
func (r *Receiver) Requests() ([]*tracepb.TracesData, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.TracesData(nil), r.requests...), append([]http.Header(nil), r.headers...)
}

// Attr returns a string attribute of s ("" if absent).
func Attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// TraceID and SpanID return s's ids in the hex form of a traceparent.
func TraceID(s *tracepb.Span) string { return hex.EncodeToString(s.TraceId) }
func SpanID(s *tracepb.Span) string  { return hex.EncodeToString(s.SpanId) }

// ParentID returns s's parent span id in hex ("" for a root span).
func ParentID(s *tracepb.Span) string { return hex.EncodeToString(s.ParentSpanId) }
