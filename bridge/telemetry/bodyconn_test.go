package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestPostCopiesNoBody: a POST to a plain-HTTP collector writes the body
// from the exporter's buffer — no 32 KiB copy buffer a POST, as net/http
// alone allocates for a body of known length — and still sends its
// Content-Length.
func TestPostCopiesNoBody(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	var lengths atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 && len(r.TransferEncoding) == 0 {
			lengths.Add(1)
		}
		io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	e, err := newExporter(exportConfig{url: srv.URL + "/v1/traces", timeout: 10 * time.Second}, nil, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	body := bytes.Repeat([]byte("span"), 10<<10) // 40 KiB, a batch of ~128 spans
	post := func() {
		if code, _, err := e.post(context.Background(), body); err != nil || code != 200 {
			t.Fatal(code, err)
		}
	}
	post() // the connection, and the server's first buffers
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		post()
	}
	runtime.ReadMemStats(&after)
	// Both ends of the POST are in this process: the request, its
	// headers, the server's reading of them — a few KiB.
	perPost := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated a POST (client and server)", perPost)
	if perPost >= 16<<10 {
		t.Errorf("%d bytes allocated a POST of %d bytes, want under 16 KiB", perPost, len(body))
	}
	if got := lengths.Load(); got != n+1 {
		t.Errorf("%d of %d POSTs carried Content-Length", got, n+1)
	}
}
