package stream

import (
	"io"
	"net"
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
	r := NewResponder(w, true)
	r.StartSSE()
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := r.Event(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDetachedEvent measures one SSE event of a detached stream over
// loopback TCP, written in place and by a writer as a detached stream does
// (writers.go): the second costs two goroutine switches per wake-up, the
// price of waiting on a 2 KiB stack.
func BenchmarkDetachedEvent(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}`)
	for _, aside := range []bool{false, true} {
		name := "in-place"
		if aside {
			name = "writer"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.Copy(io.Discard, c)
				c.Close()
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			var ws writers
			defer ws.close()
			r := &Responder{modern: true, raw: &rawStream{c: c, cancel: func() {}, writers: &ws}}
			r.raw.job.done = make(chan struct{}, 1)
			if err := r.raw.head(http.StatusOK, http.Header{}, nil); err != nil {
				b.Fatal(err)
			}
			r.started, r.sse = true, true
			s := NewSink(-1)
			b.ReportAllocs()
			for b.Loop() {
				s.Push(msg, false)
				<-s.wake
				var more bool
				if aside {
					_, more = r.run(s, opStep)
				} else {
					_, more = r.do(s, opStep)
				}
				if !more {
					b.Fatal("the stream ended")
				}
			}
			c.Close()
			<-drained
		})
	}
}
