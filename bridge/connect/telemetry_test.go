package connect

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// TestTelemetryThroughConnect: a Go SDK host calls a tool N times through
// an in-process Bridge with metrics and tracing on. /metrics counts N
// tools/call for that tool in mcp_client_operation_duration_seconds; the
// OTLP receiver gets one CLIENT span per request, the one whose host put a
// traceparent in _meta in that trace; the remote receives each span's
// traceparent in params._meta.
func TestTelemetryThroughConnect(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent  = "00f067aa0ba902b7"
		n       = 5
	)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tel, err := telemetry.New(ctx, telemetry.Options{Side: telemetry.Client, Metrics: true, Tracing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())

	var mu sync.Mutex
	var calls []string // tools/call bodies the remote received
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() }, &mcp.StreamableHTTPOptions{Stateless: true})
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			mu.Lock()
			calls = append(calls, string(b))
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		sdk.ServeHTTP(w, r)
	}))
	defer remote.Close()

	b, err := New(Config{URL: remote.URL, MaxRetries: -1, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	hostIn, bridgeOut := io.Pipe()
	bridgeIn, hostOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := b.Run(ctx, bridgeIn, bridgeOut)
		bridgeOut.Close()
		done <- err
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: hostIn, Writer: hostOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
		if i == 0 {
			p.Meta = mcp.Meta{"traceparent": "00-" + traceID + "-" + parent + "-01"}
		}
		if _, err := cs.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := rec.Body.String()
	var count float64
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "mcp_client_operation_duration_seconds_count{") &&
			strings.Contains(line, `mcp_method_name="tools/call"`) && strings.Contains(line, `gen_ai_tool_name="echo"`) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			count += v
		}
	}
	if count != n {
		t.Errorf("tools/call echo count = %v, want %d\n%s", count, n, text)
	}

	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var toolSpans []*tracepb.Span
	for _, s := range rcv.Spans() {
		if otlptest.Attr(s, "mcp.method.name") == "tools/call" {
			toolSpans = append(toolSpans, s)
		}
	}
	if len(toolSpans) != n {
		t.Fatalf("%d tools/call spans, want %d", len(toolSpans), n)
	}
	mu.Lock()
	defer mu.Unlock()
	inTrace := 0
	for _, s := range toolSpans {
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || otlptest.Attr(s, "gen_ai.tool.name") != "echo" || s.Name != "tools/call echo" {
			t.Errorf("span %q kind %v tool %q", s.Name, s.Kind, otlptest.Attr(s, "gen_ai.tool.name"))
		}
		if otlptest.TraceID(s) == traceID {
			inTrace++
			if otlptest.ParentID(s) != parent {
				t.Errorf("the traced call's span has parent %s, want the host's %s", otlptest.ParentID(s), parent)
			}
		}
		want := `"traceparent":"00-` + otlptest.TraceID(s) + "-" + otlptest.SpanID(s) + `-01"`
		found := false
		for _, c := range calls {
			found = found || strings.Contains(c, want)
		}
		if !found {
			t.Errorf("the remote never received %s; it got:\n%s", want, strings.Join(calls, "\n"))
		}
	}
	if inTrace != 1 {
		t.Errorf("%d spans in the host's trace, want 1", inTrace)
	}
}
