package stream

import (
	"io"
	"net"
	"testing"
	"time"
)

// Streams whose clients do not read block the writers they got; another
// stream's write does not wait for them: it runs on a goroutine of its own.
func TestWritersSpillWhenAllBusy(t *testing.T) {
	var ws writers
	defer ws.close()
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`)
	stream := func(c net.Conn) (*Responder, *Sink) {
		r := &Responder{modern: true, raw: &rawStream{c: c, cancel: func() {}, writers: &ws, chunks: true}}
		r.raw.job.done = make(chan struct{}, 1)
		r.started, r.sse = true, true
		s := NewSink(-1)
		s.Push(msg, false)
		return r, s
	}
	// net.Pipe has no buffer: a write blocks until the other end reads.
	// Each stuck stream's first byte is read, so its write has begun
	// (every writer is busy, one stream spilled) and blocks on the rest.
	var stuck []net.Conn
	defer func() { // before ws.close, which waits for the writers
		for _, c := range stuck {
			c.Close()
		}
	}()
	blocked := make(chan struct{}, writersPerHandler+1)
	for i := range writersPerHandler + 1 {
		c, peer := net.Pipe()
		stuck = append(stuck, c, peer)
		r, s := stream(c)
		go func() {
			r.run(s, opStep) // returns once the pipe closes
			blocked <- struct{}{}
		}()
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := peer.Read(make([]byte, 1)); err != nil {
			t.Fatalf("stuck stream %d never began to write: %v", i, err)
		}
	}
	c, peer := net.Pipe()
	defer c.Close()
	go io.Copy(io.Discard, peer)
	r, s := stream(c)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, more := r.run(s, opStep); !more {
			t.Error("the reading client's stream ended")
		}
	}()
	select {
	case <-done:
		t.Logf("written in %v with every writer blocked", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for writers blocked on clients that do not read")
	}
	for _, c := range stuck {
		c.Close()
	}
	for range writersPerHandler + 1 {
		<-blocked
	}
	peer.Close()
}
