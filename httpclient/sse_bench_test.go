package httpclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/r3labs/sse/v2"
)

// BenchmarkSSE16MiB reads one 16 MiB SSE event from a loopback httptest
// server. The server writes the stream in one Write ("onewrite") or in
// flushed 4 KiB writes ("4KiB"). Sub-benchmarks:
//
//   - raw: io.Copy of the body to io.Discard, the floor;
//   - r3labs: the r3labs framer straight on the body, without fillReader;
//   - client: Client.Post and Response.Next, i.e. fillReader + parseEvent.
func BenchmarkSSE16MiB(b *testing.B) {
	const size = 16 << 20
	var stream bytes.Buffer
	stream.WriteString("event: message\ndata: ")
	stream.Write(bytes.Repeat([]byte("x"), size))
	stream.WriteString("\n\n")
	payload := stream.Bytes()

	srv := newServer(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk, _ := strconv.Atoi(r.URL.Query().Get("chunk"))
		if chunk <= 0 {
			_, _ = w.Write(payload)
			return
		}
		f := w.(http.Flusher)
		for p := payload; len(p) > 0; {
			n := min(chunk, len(p))
			if _, err := w.Write(p[:n]); err != nil {
				return
			}
			f.Flush()
			p = p[n:]
		}
	})
	hc := &http.Client{}
	b.Cleanup(hc.CloseIdleConnections)

	for _, mode := range []struct{ name, query string }{{"onewrite", ""}, {"4KiB", "?chunk=4096"}} {
		url := srv.URL + mode.query
		get := func(b *testing.B) *http.Response {
			resp, err := hc.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			return resp
		}
		b.Run(mode.name+"/raw", func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				resp := get(b)
				if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(len(payload)) {
					b.Fatalf("copied %d, %v", n, err)
				}
				resp.Body.Close()
			}
		})
		b.Run(mode.name+"/r3labs", func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				resp := get(b)
				raw, err := sse.NewEventStreamReader(resp.Body, 32<<20).ReadEvent()
				if err != nil || len(raw) != len(payload)-2 {
					b.Fatalf("event of %d bytes, %v", len(raw), err)
				}
				resp.Body.Close()
			}
		})
		b.Run(mode.name+"/client", func(b *testing.B) {
			c := &Client{Endpoint: url, HTTPClient: hc}
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				resp, err := c.Post(context.Background(), []byte(reqBody), nil)
				if err != nil {
					b.Fatal(err)
				}
				msg, err := resp.Next()
				if err != nil || len(msg) != size {
					b.Fatalf("message of %d bytes, %v", len(msg), err)
				}
				resp.Close()
			}
		})
	}
}

// BenchmarkSSE16MiBSmallReads takes the network out: the same 16 MiB event
// arrives from memory in 64 KiB reads, about what a loaded TCP connection
// delivers, which is the case where r3labs' rescanning is quadratic.
func BenchmarkSSE16MiBSmallReads(b *testing.B) {
	const size, readSize = 16 << 20, 64 << 10
	payload := append(append([]byte("data: "), bytes.Repeat([]byte("x"), size)...), "\n\n"...)
	src := func() io.Reader { return &chunkReader{data: payload, n: readSize} }
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if n, err := io.Copy(io.Discard, struct{ io.Reader }{src()}); err != nil || n != int64(len(payload)) {
				b.Fatalf("copied %d, %v", n, err)
			}
		}
	})
	b.Run("r3labs", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if raw, err := sse.NewEventStreamReader(src(), 32<<20).ReadEvent(); err != nil || len(raw) != len(payload)-2 {
				b.Fatalf("event of %d bytes, %v", len(raw), err)
			}
		}
	})
	b.Run("fillReader", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			msgs, err := streamMessages(b, nil, &fillReader{r: src()}, 32<<20)
			if err != io.EOF || len(msgs) != 1 || len(msgs[0]) != size {
				b.Fatalf("%d messages, %v", len(msgs), err)
			}
		}
	})
}
