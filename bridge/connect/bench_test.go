package connect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// BenchmarkToolCallTelemetry drives an in-process Bridge with 64 tools/call
// in flight, with telemetry off, metrics on, tracing on (every span
// exported to a collector that discards) and both. The remote answers
// every request at once with a fixed result (the Go SDK server builds a
// server per stateless request, whose cost would hide the bridge's), so
// calls/s of each mode against off is the bridge's own telemetry cost;
// `go test -run x -bench ToolCallTelemetry ./bridge/connect/`.
func BenchmarkToolCallTelemetry(b *testing.B) {
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, readBody(r), `{"resultType":"complete","content":[{"type":"text","text":"x"}]}`)
	}))
	defer remote.Close()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	for _, mode := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"metrics+tracing", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			tel, err := telemetry.New(context.Background(), telemetry.Options{Side: telemetry.Client, Metrics: mode.metrics, Tracing: mode.tracing})
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			br, err := New(Config{URL: remote.URL, Protocol: ProtocolModern, MaxRetries: -1, Telemetry: tel})
			if err != nil {
				b.Fatal(err)
			}
			hostIn, bridgeOut := io.Pipe()
			bridgeIn, hostOut := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				err := br.Run(ctx, bridgeIn, bridgeOut)
				bridgeOut.Close()
				done <- err
			}()
			defer func() {
				hostOut.Close()
				cancel()
				<-done
			}()
			const inflight = 64
			slots := make(chan struct{}, inflight)
			read := make(chan struct{})
			go func() {
				defer close(read)
				sc := bufio.NewScanner(hostIn)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					<-slots
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				slots <- struct{}{}
				if _, err := io.WriteString(hostOut, modernCall(fmt.Sprint(i+1), "echo")+"\n"); err != nil {
					b.Fatal(err)
				}
			}
			for range inflight {
				slots <- struct{}{}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			hostOut.Close()
			<-read
		})
	}
}
