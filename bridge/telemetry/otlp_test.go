package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
)

// env is a Getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// tracingScope returns a Scope of a Telemetry with tracing on towards an
// endpoint nobody listens on (the tests here encode by hand).
func tracingScope(t testing.TB, side Side, name string, extra map[string]string) *Scope {
	t.Helper()
	m := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
	for k, v := range extra {
		m[k] = v
	}
	tel, err := New(context.Background(), Options{Side: side, Tracing: true, Getenv: env(m), Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing to flush that matters
		tel.Shutdown(ctx)
	})
	return tel.ScopeFor(side, name)
}

// finish ends o as End would, with these outcomes, but returns its record
// instead of queueing it.
func (o *Op) finish(errType, msg, session string) *spanRecord {
	r := o.r
	o.r = nil
	r.errType, r.errMsg, r.session = errType, msg, session
	r.endNs = time.Now().UnixNano()
	return r
}

// decodeBoth encodes ops as protobuf and as JSON and decodes each with the
// reference bindings (test-only imports); both must agree.
func decodeBoth(t testing.TB, res []pair, ops []*spanRecord) *tracepb.TracesData {
	t.Helper()
	var p pb
	appendProtoRequest(&p, res, "1.2.3", ops)
	var fromProto tracepb.TracesData
	if err := proto.Unmarshal(p.b, &fromProto); err != nil {
		t.Fatalf("protobuf does not decode: %v", err)
	}
	js := appendJSONRequest(nil, res, "1.2.3", ops)
	fromJSON, err := otlptest.DecodeJSON(js)
	if err != nil {
		t.Fatalf("JSON does not decode: %v\n%s", err, js)
	}
	if !proto.Equal(&fromProto, fromJSON) {
		t.Fatalf("protobuf and JSON differ:\n%v\n%v", &fromProto, fromJSON)
	}
	return &fromProto
}

func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// TestOTLPEncodingRoundTrips: every field the bridge writes decodes, with
// the reference protobuf bindings and from JSON, to what the Op holds.
func TestOTLPEncodingRoundTrips(t *testing.T) {
	s := tracingScope(t, Client, "remote", nil)
	meta := "00-" + tpTrace + "-" + tpSpan + "-01"
	hdr := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	long := strings.Repeat("é", 9000) // an 18000-byte message: a 3-byte length
	o := s.Begin(&Request{Method: "tools/call", Name: "echo\xff", ID: []byte(`"req-1"`), Version: "2025-11-25", Session: "s0",
		MetaParent: meta, MetaState: "rojo=1", HeaderParent: hdr, HeaderState: "congo=2"})
	o.SetSession("s1")
	o.Fail("-32602", long)
	r := o.finish("-32602", long, "s1")
	root := s.Begin(&Request{Method: "prompts/get", Name: "p", ID: []byte("7")}).finish("", "", "")
	res := []pair{{"service.name", "svc"}, {"k", strings.Repeat("v", 200)}}

	got := decodeBoth(t, res, []*spanRecord{r, root})
	rs := got.ResourceSpans[0]
	if len(got.ResourceSpans) != 1 || len(rs.ScopeSpans) != 1 || len(rs.ScopeSpans[0].Spans) != 2 {
		t.Fatalf("shape: %v", got)
	}
	for i, kv := range rs.Resource.Attributes {
		if kv.Key != res[i].key || kv.Value.GetStringValue() != res[i].value {
			t.Errorf("resource attribute %d = %v", i, kv)
		}
	}
	if sc := rs.ScopeSpans[0].Scope; sc.Name != "github.com/mcp-bridge/mcp-bridge" || sc.Version != "1.2.3" {
		t.Errorf("scope %v", sc)
	}
	sp := rs.ScopeSpans[0].Spans[0]
	wantID, _ := hex.DecodeString(tpTrace)
	wantParent, _ := hex.DecodeString(tpSpan)
	if !bytes.Equal(sp.TraceId, wantID) || !bytes.Equal(sp.SpanId, r.sc.spanID[:]) || !bytes.Equal(sp.ParentSpanId, wantParent) {
		t.Errorf("ids %x %x %x", sp.TraceId, sp.SpanId, sp.ParentSpanId)
	}
	if sp.TraceState != "rojo=1" || sp.Flags != 0x301 || sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || sp.Name != "tools/call echo\uFFFD" {
		t.Errorf("state %q flags %#x kind %v name %q", sp.TraceState, sp.Flags, sp.Kind, sp.Name)
	}
	if sp.StartTimeUnixNano != uint64(r.start.UnixNano()) || sp.EndTimeUnixNano != uint64(r.endNs) || sp.EndTimeUnixNano < sp.StartTimeUnixNano {
		t.Errorf("times %d %d", sp.StartTimeUnixNano, sp.EndTimeUnixNano)
	}
	want := map[string]string{"mcp.method.name": "tools/call", "network.transport": "tcp", "network.protocol.name": "http",
		"gen_ai.tool.name": "echo\uFFFD", "gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "req-1",
		"mcp.protocol.version": "2025-11-25", "mcp.session.id": "s1", "mcp.bridge.server": "remote",
		"error.type": "-32602", "rpc.response.status_code": "-32602"}
	if a := attrs(sp); len(a) != len(want) {
		t.Errorf("attributes %v, want %v", a, want)
	} else {
		for k, v := range want {
			if a[k] != v {
				t.Errorf("%s = %q, want %q", k, a[k], v)
			}
		}
	}
	if len(sp.Links) != 1 || hex.EncodeToString(sp.Links[0].TraceId) != hdr[3:35] || hex.EncodeToString(sp.Links[0].SpanId) != hdr[36:52] ||
		sp.Links[0].TraceState != "congo=2" || sp.Links[0].Flags != 0x301 {
		t.Errorf("links %v", sp.Links)
	}
	if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || sp.Status.GetMessage() != long {
		t.Errorf("status code %v, message of %d bytes", sp.Status.GetCode(), len(sp.Status.GetMessage()))
	}
	rt := rs.ScopeSpans[0].Spans[1]
	if len(rt.ParentSpanId) != 0 || rt.Flags != 0x101 || rt.Name != "prompts/get p" || rt.Status != nil || len(rt.Links) != 0 ||
		attrs(rt)["gen_ai.prompt.name"] != "p" || attrs(rt)["jsonrpc.request.id"] != "7" || rt.TraceState != "" {
		t.Errorf("root span %v", rt)
	}
	if bytes.Equal(rt.TraceId, sp.TraceId) || len(rt.TraceId) != 16 || len(rt.SpanId) != 8 {
		t.Errorf("root span ids %x %x", rt.TraceId, rt.SpanId)
	}
}

// FuzzOTLPEncoding: whatever strings a peer puts in a request, the batch
// decodes with the reference bindings, the same from protobuf and JSON,
// with the attribute values it was given (as valid UTF-8).
func FuzzOTLPEncoding(f *testing.F) {
	f.Add("tools/call", "echo", `"id"`, "sess", "-32600", "bad request")
	f.Add("prompts/get", "\xff\xfe", "1", "", "tool_error", strings.Repeat("x", 300))
	s := tracingScope(f, Server, "srv", nil)
	f.Fuzz(func(t *testing.T, method, name, id, session, errType, msg string) {
		r := s.Begin(&Request{Method: method, Name: name, ID: []byte(id), Session: session}).finish(errType, msg, session)
		got := decodeBoth(t, []pair{{"service.name", name}}, []*spanRecord{r, r})
		spans := got.ResourceSpans[0].ScopeSpans[0].Spans
		if len(spans) != 2 {
			t.Fatalf("%d spans", len(spans))
		}
		a := attrs(spans[0])
		if a["mcp.method.name"] != toValidUTF8(method) || session != "" && a["mcp.session.id"] != toValidUTF8(session) {
			t.Fatalf("attributes %v", a)
		}
		if errType != "" && (spans[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || !utf8.ValidString(spans[0].Status.GetMessage())) {
			t.Fatalf("status %v", spans[0].Status)
		}
	})
}
