package serve

import (
	"io"
	"net/http"
	"testing"
)

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkSSEEvent measures writing one SSE event (framing and flush).
func BenchmarkSSEEvent(b *testing.B) {
	w := &discardWriter{h: http.Header{}}
	r := newResponder(w, true)
	r.startSSE()
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := r.event(msg); err != nil {
			b.Fatal(err)
		}
	}
	_ = io.Discard
}
