package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// protoPartial is an ExportTraceServiceResponse with a partial success,
// written with protowire (a test-only import).
func protoPartial(rejected int64, msg string) []byte {
	var ps []byte
	ps = protowire.AppendTag(ps, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(rejected))
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, msg)
	var b []byte
	b = protowire.AppendTag(b, 9, protowire.Fixed32Type) // an unknown field first
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, ps)
}

// TestPartialSuccess: a 200 whose body says spans were rejected is not
// retried and is logged with the count and the collector's message, in
// both protocols.
func TestPartialSuccess(t *testing.T) {
	for _, mode := range []struct{ protocol, body, ct string }{
		{"http/protobuf", string(protoPartial(2, "spans too old")), "application/x-protobuf"},
		{"http/json", `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"spans too old"}}`, "application/json"},
	} {
		t.Run(mode.protocol, func(t *testing.T) {
			f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
				w.Header().Set("Content-Type", mode.ct)
				w.Write([]byte(mode.body))
				return true
			})
			var log testmain.SyncBuffer
			tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": mode.protocol}, &log)
			endSpans(tel, 3)
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := len(f.attempts()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
			if l := log.String(); !strings.Contains(l, `"rejected_spans":2`) || !strings.Contains(l, "spans too old") {
				t.Errorf("log: %s", l)
			}
		})
	}
	// A plain success says nothing.
	rcv := otlptest.Start(t)
	var log testmain.SyncBuffer
	tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}, &log)
	endSpans(tel, 1)
	tel.Shutdown(context.Background())
	if log.String() != "" {
		t.Errorf("log after a full success: %s", log.String())
	}
}

// refResponse reads an ExportTraceServiceResponse with protowire.
func refResponse(b []byte) (partialSuccess, bool) {
	var ps partialSuccess
	walk := func(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, sub []byte)) bool {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			var v uint64
			var sub []byte
			switch typ {
			case protowire.VarintType:
				v, n = protowire.ConsumeVarint(b)
			case protowire.Fixed32Type:
				var v32 uint32
				v32, n = protowire.ConsumeFixed32(b)
				v = uint64(v32)
			case protowire.Fixed64Type:
				v, n = protowire.ConsumeFixed64(b)
			case protowire.BytesType:
				sub, n = protowire.ConsumeBytes(b)
			default:
				return false
			}
			if n < 0 {
				return false
			}
			b = b[n:]
			f(num, typ, v, sub)
		}
		return true
	}
	ok := true
	top := walk(b, func(num protowire.Number, typ protowire.Type, _ uint64, sub []byte) {
		if num != 1 || typ != protowire.BytesType {
			return
		}
		ok = ok && walk(sub, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) {
			switch {
			case num == 1 && typ != protowire.BytesType:
				ps.rejected = int64(v)
			case num == 2 && typ == protowire.BytesType:
				ps.msg = string(s)
			}
		})
	})
	return ps, top && ok
}

// FuzzCollectorResponse: the bridge reads a collector's answer as
// protowire does (a differential test), and the JSON reader never
// panics.
func FuzzCollectorResponse(f *testing.F) {
	f.Add(protoPartial(2, "x"))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})
	f.Add([]byte{0x0b, 0x0c})
	f.Add([]byte(`{"partialSuccess":{"rejectedSpans":5}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseProtoResponse(b)
		want, ok := refResponse(b)
		if (err == nil) != ok || ok && got != want {
			t.Fatalf("%x: bridge %+v %v, protowire %+v %v", b, got, err, want, ok)
		}
		parseJSONResponse(b)
	})
}
