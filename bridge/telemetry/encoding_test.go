package telemetry

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden OTLP batches in testdata/otlp")

// goldenBatch is a fixed batch: every field the encoders write, with ids
// and times that do not change between runs.
func goldenBatch(t *testing.T) ([]pair, []*spanRecord) {
	client := tracingScope(t, Client, "remote", nil)
	server := tracingScope(t, Server, "", nil)
	start := time.Unix(1764806400, 123456789)
	a := &spanRecord{s: client, start: start, method: "tools/call", name: "echo", id: `"req-1"`, version: "2025-11-25",
		session: "s1", errType: "-32602", errMsg: "bad params é", endNs: start.UnixNano() + 2_500_000,
		sc:       spanContext{traceID: [16]byte{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}, spanID: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, flags: 1, state: "rojo=1"},
		parentID: [8]byte{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		hasLink:  true, link: spanContext{traceID: [16]byte{15: 9}, spanID: [8]byte{7: 9}, flags: 1, state: "congo=2", remote: true}}
	b := &spanRecord{s: server, start: start.Add(time.Millisecond), method: "prompts/get", name: "greet", id: "7",
		endNs: start.UnixNano() + 3_000_000,
		sc:    spanContext{traceID: [16]byte{0: 1, 15: 2}, spanID: [8]byte{0: 3, 7: 4}, flags: 1}}
	c := &spanRecord{s: server, start: start.Add(2 * time.Millisecond), method: "tools/list", endNs: start.UnixNano() + 4_000_000,
		errType: "tool_error", errMsg: string(bytes.Repeat([]byte("x"), 200)),
		sc: spanContext{traceID: [16]byte{0: 5}, spanID: [8]byte{0: 6}}}
	return []pair{{"service.name", "mcp-bridge"}, {"service.version", "1.2.3"}}, []*spanRecord{a, b, c}
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(pairs ...string) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, &commonpb.KeyValue{Key: pairs[i], Value: str(pairs[i+1])})
	}
	return out
}

// goldenWant is goldenBatch written with the official bindings, field by
// field from the OTLP trace .proto and the MCP semantic conventions. It is
// a TracesData, which the .proto declares wire-compatible with
// ExportTraceServiceRequest (the collector package would pull gRPC into
// the test build for the same two fields).
func goldenWant() *tracepb.TracesData {
	start := uint64(time.Unix(1764806400, 123456789).UnixNano())
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: kv("service.name", "mcp-bridge", "service.version", "1.2.3")},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "github.com/mcp-bridge/mcp-bridge", Version: "1.2.3"},
			Spans: []*tracepb.Span{{
				TraceId:      []byte{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
				SpanId:       []byte{1, 2, 3, 4, 5, 6, 7, 8},
				TraceState:   "rojo=1",
				ParentSpanId: []byte{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
				// SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (0x100) | sampled; the
				// parent came from a peer: CONTEXT_IS_REMOTE (0x200).
				Flags:             0x301,
				Name:              "tools/call echo",
				Kind:              tracepb.Span_SPAN_KIND_CLIENT,
				StartTimeUnixNano: start,
				EndTimeUnixNano:   start + 2_500_000,
				Attributes: kv("mcp.method.name", "tools/call", "network.transport", "tcp", "network.protocol.name", "http",
					"gen_ai.tool.name", "echo", "gen_ai.operation.name", "execute_tool", "jsonrpc.request.id", "req-1",
					"mcp.protocol.version", "2025-11-25", "mcp.session.id", "s1", "mcp.bridge.server", "remote",
					"error.type", "-32602", "rpc.response.status_code", "-32602"),
				Links: []*tracepb.Span_Link{{TraceId: append(make([]byte, 15), 9), SpanId: append(make([]byte, 7), 9),
					TraceState: "congo=2", Flags: 0x301}},
				Status: &tracepb.Status{Message: "bad params é", Code: tracepb.Status_STATUS_CODE_ERROR},
			}, {
				TraceId: append(append([]byte{1}, make([]byte, 14)...), 2), SpanId: []byte{3, 0, 0, 0, 0, 0, 0, 4},
				Flags: 0x101, Name: "prompts/get greet", Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: start + 1_000_000, EndTimeUnixNano: start + 3_000_000,
				Attributes: kv("mcp.method.name", "prompts/get", "network.transport", "tcp", "network.protocol.name", "http",
					"gen_ai.prompt.name", "greet", "jsonrpc.request.id", "7"),
			}, {
				TraceId: append([]byte{5}, make([]byte, 15)...), SpanId: []byte{6, 0, 0, 0, 0, 0, 0, 0},
				Flags: 0x100, Name: "tools/list", Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: start + 2_000_000, EndTimeUnixNano: start + 4_000_000,
				Attributes: kv("mcp.method.name", "tools/list", "network.transport", "tcp", "network.protocol.name", "http",
					"error.type", "tool_error"),
				Status: &tracepb.Status{Message: string(bytes.Repeat([]byte("x"), 200)), Code: tracepb.Status_STATUS_CODE_ERROR},
			}},
		}},
	}}}
}

// TestOTLPGolden pins both encoders: each encodes the fixed batch to the
// bytes in testdata/otlp (go test -run TestOTLPGolden -update rewrites
// them), and those bytes decode, with the official protobuf bindings (and
// the OTLP JSON rules for http/json), to the request goldenWant builds.
// A change to an encoder shows up as a golden diff to review; a change
// that breaks the wire format fails against the official definitions.
func TestOTLPGolden(t *testing.T) {
	res, spans := goldenBatch(t)
	want := goldenWant()
	for _, tc := range []struct {
		file   string
		enc    otlpEncoding
		ctype  string
		decode func([]byte) (*tracepb.TracesData, error)
	}{
		{"batch.pb", protoEncoding{}, "application/x-protobuf", func(b []byte) (*tracepb.TracesData, error) {
			var r tracepb.TracesData
			return &r, proto.Unmarshal(b, &r)
		}},
		{"batch.json", jsonEncoding{}, "application/json", func(b []byte) (*tracepb.TracesData, error) {
			return otlptest.DecodeJSON(b)
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if got := tc.enc.contentType(); got != tc.ctype {
				t.Errorf("content type %q, want %q", got, tc.ctype)
			}
			got := tc.enc.appendRequest([]byte("keep"), res, "1.2.3", spans)
			if !bytes.HasPrefix(got, []byte("keep")) {
				t.Fatalf("appendRequest did not append: %q", got[:4])
			}
			got = got[4:]
			path := filepath.Join("testdata", "otlp", tc.file)
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, golden) {
				t.Errorf("the encoding differs from %s (review, then -update):\n got %q\nwant %q", path, got, golden)
			}
			dec, err := tc.decode(golden)
			if err != nil {
				t.Fatalf("%s does not decode: %v", path, err)
			}
			if !proto.Equal(dec, want) {
				t.Errorf("%s decodes to\n%v\nwant\n%v", path, dec, want)
			}
		})
	}
}

// TestOTLPGoldenResponses: an ExportTraceServiceResponse with a partial
// success (partial_success = 1; rejected_spans = 1, error_message = 2,
// written here with protowire, and its protobuf-JSON form, int64 as a
// string) is read by each encoding's parseResponse; an empty body is a
// full success.
func TestOTLPGoldenResponses(t *testing.T) {
	var inner []byte
	inner = protowire.AppendTag(inner, 1, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 3)
	inner = protowire.AppendTag(inner, 2, protowire.BytesType)
	inner = protowire.AppendString(inner, "spans too old")
	pbBytes := protowire.AppendTag(nil, 1, protowire.BytesType)
	pbBytes = protowire.AppendBytes(pbBytes, inner)
	jsBytes := []byte(`{"partialSuccess":{"rejectedSpans":"3","errorMessage":"spans too old"}}`)
	for _, tc := range []struct {
		name string
		enc  otlpEncoding
		body []byte
	}{{"protobuf", protoEncoding{}, pbBytes}, {"json", jsonEncoding{}, jsBytes}} {
		ps, err := tc.enc.parseResponse(tc.body)
		if err != nil || ps.rejected != 3 || ps.msg != "spans too old" {
			t.Errorf("%s: %+v, %v (body %q)", tc.name, ps, err, tc.body)
		}
		ps, err = tc.enc.parseResponse(nil)
		if err != nil || ps.rejected != 0 || ps.msg != "" {
			t.Errorf("%s, empty body: %+v, %v", tc.name, ps, err)
		}
	}
}
