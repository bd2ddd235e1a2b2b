package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// BenchmarkToolCallTelemetry compares a 2026-07-28 tools/call through the
// whole Handler (HTTP, the Go SDK's everything server as the child) with
// telemetry off, metrics on, and metrics plus tracing (every span exported
// to an OTLP receiver): calls/s on ≥ 90% of off is the target. Run it
// with a -run pattern other than '^$' (that one builds no child):
//
//	go test -run x -bench ToolCallTelemetry ./bridge/serve/
func BenchmarkToolCallTelemetry(b *testing.B) {
	if bins["everything"] == "" {
		b.Fatal("the everything server was not built (-run='^$' builds nothing; use -run x)")
	}
	for _, mode := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"metrics+tracing", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.tracing {
				// A collector that discards: decoding the spans here would
				// bill the bridge for the collector's work.
				sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
				defer sink.Close()
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			}
			tel, err := telemetry.New(context.Background(), telemetry.Options{Side: telemetry.Server, Metrics: mode.metrics, Tracing: mode.tracing})
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			h, err := New(Config{Command: commandFor(bins["everything"]), Telemetry: tel, TerminateDelay: 500 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			h.Start()
			srv := httptest.NewServer(h)
			defer func() {
				h.BeginShutdown()
				srv.CloseClientConnections()
				h.Close()
				srv.Close()
			}()
			for deadline := time.Now().Add(30 * time.Second); ; {
				if time.Now().After(deadline) {
					b.Fatal("the bridge never became ready")
				}
				resp, err := http.Get(srv.URL + "/readyz")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
				}
				time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},` + modernMeta + `}}`
			hdr := modernHeaders("tools/call", "test_simple_text")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := mcpRequest(context.Background(), http.MethodPost, srv.URL+"/mcp", body, hdr)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
