//go:build unix

package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// BenchmarkSpan is the bridge's cost of one traced request: ReadMeta,
// Begin, Relay (the _meta edit serve and connect make),
// Result, End, every span exported to a loopback OTLP/HTTP receiver that
// only counts bytes. Besides ns/op (the request path) it reports
// cpu-ns/op, the process's CPU time per span including the exporter's
// goroutine, and wire-B/op, the OTLP bytes per span received (a drop would
// show as fewer). It uses only the public API and the standard OTEL_*
// variables. The queue holds 200000 spans so that none is dropped when N
// is at most that:
//
//	go test -run x -bench 'Span$' -benchtime 100000x ./bridge/telemetry/
func BenchmarkSpan(b *testing.B) {
	const envelope = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}`
	// The request as serve and connect see it: a 2026-07-28 envelope whose
	// _meta carries the client's context, which Relay replaces, or none
	// (Relay adds the span's; scripts/bench's load sends none).
	b.Run("meta-parent", func(b *testing.B) {
		benchSpan(b, envelope+`,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=1"}}}`)
	})
	b.Run("no-parent", func(b *testing.B) { benchSpan(b, envelope+`}}}`) })
}

func benchSpan(b *testing.B, request string) {
	var got atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none")
	b.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "200000")
	tel, err := New(context.Background(), Options{Side: Server, Tracing: true, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	s := tel.Scope("srv")
	var res wire.Message
	if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`), &res); err != nil {
		b.Fatal(err)
	}
	var call wire.Message
	if err := wire.Parse([]byte(request), &call); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		meta := ReadMeta(&call)
		o := s.Begin(&Request{Method: "tools/call", Name: "echo", ID: call.IDBytes(), Version: "2026-07-28",
			MetaParent: meta.Parent, MetaState: meta.State})
		m := call
		if out := o.Relay(&m, meta); string(out.Raw) == string(call.Raw) {
			b.Fatal("the message was not edited")
		}
		o.Result(&res)
		o.End()
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(got.Load())/float64(b.N), "wire-B/op")
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
