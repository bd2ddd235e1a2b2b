//go:build unix

package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestServeTracesFlushedAtExit: the binary exports spans over OTLP/HTTP as
// the OTEL_* environment says, and on SIGTERM flushes those still queued
// (the schedule delay is an hour here, so the exit flush is the only
// export). The span is the child of the client's traceparent.
func TestServeTracesFlushedAtExit(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData // the wire form of ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &td) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--", bin["memos"])
	waitReady(t, addr)
	body, hdr := toolCall(1, "memo_debug_stats", "{}")
	hdr["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resp := post(t, "http://"+addr+"/mcp", body, hdr)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call: %d", resp.StatusCode)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, s := range spans {
		if s.Name == "tools/call memo_debug_stats" {
			found = true
			if hex.EncodeToString(s.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(s.ParentSpanId) != "00f067aa0ba902b7" || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("span %v", s)
			}
		}
	}
	if !found {
		t.Errorf("no tools/call span among %d exported at exit", len(spans))
	}
}

// TestServeRefusesGRPC: OTLP over gRPC is not built in; asking for it is
// an error at start, not a silent switch to HTTP.
func TestServeRefusesGRPC(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	code, _, stderr := runCLI("serve", "--listen", "127.0.0.1:0", "--", bin["memos"])
	if code == 0 || !strings.Contains(stderr, "OTLP over gRPC is not supported; use http/protobuf") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
