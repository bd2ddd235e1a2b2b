package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkObserve is the metrics cost of one finished request whose
// label set was seen before: label capping, the child lookup and the
// histogram observation.
func BenchmarkObserve(b *testing.B) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	s := tel.Scope("srv")
	s.observe("tools/call", "echo", "2026-07-28", "", 0.042)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.observe("tools/call", "echo", "2026-07-28", "", 0.042)
		}
	})
}

// BenchmarkScrape8192 is one /metrics read with maxSeries (8,192)
// operation series of one server.
func BenchmarkScrape8192(b *testing.B) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	s := tel.Scope("srv")
	for i := range maxSeries {
		s.observe(knownMethods[i%len(knownMethods)], fmt.Sprintf("tool-%d", i%MaxTools), fmt.Sprintf("v%d", i%MaxVersions), "", float64(i%300))
	}
	h := tel.Handler()
	for _, enc := range []string{"", "gzip"} {
		b.Run("encoding="+enc, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if enc != "" {
				req.Header.Set("Accept-Encoding", enc)
			}
			b.ReportAllocs()
			for range b.N {
				rec := httptest.NewRecorder()
				rec.Body = nil
				h.ServeHTTP(discardWriter{rec}, req)
			}
		})
	}
}

type discardWriter struct{ *httptest.ResponseRecorder }

func (d discardWriter) Write(b []byte) (int, error) { return io.Discard.Write(b) }
