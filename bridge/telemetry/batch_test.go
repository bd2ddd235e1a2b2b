package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// gateExporter reports each batch's size on entered and returns only when
// the test sends on release.
type gateExporter struct {
	entered chan int
	release chan struct{}
}

func (g *gateExporter) export(ctx context.Context, spans []*spanRecord) error {
	g.entered <- len(spans)
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return nil
}

func (g *gateExporter) close() {}

// TestBatchesOnlyWhenFull: when a full batch has been exported, the spans
// that arrived meanwhile wait for the rest of a batch (or the schedule)
// instead of going out at once in a small request — under steady load
// that posted a few dozen spans a request, each paying a whole HTTP
// exchange.
func TestBatchesOnlyWhenFull(t *testing.T) {
	g := &gateExporter{entered: make(chan int), release: make(chan struct{})}
	b := newBatcher(batchConfig{queue: 64, maxBatch: 4, delay: time.Hour, timeout: time.Minute}, g, zerolog.Nop())
	held := make(chan int, 16)
	b.held = func(n int) { // set before the first span: the queue orders it before any flush
		select {
		case held <- n:
		default:
		}
	}
	spans := func(n int) {
		for range n {
			b.enqueue(new(spanRecord))
		}
	}
	spans(4)
	if n := <-g.entered; n != 4 {
		t.Fatalf("first batch of %d spans, want 4", n)
	}
	spans(5) // arrive while the first batch is being exported
	g.release <- struct{}{}
	if n := <-g.entered; n != 4 {
		t.Fatalf("second batch of %d spans, want 4", n)
	}
	g.release <- struct{}{}
	select {
	case n := <-g.entered:
		t.Fatalf("a batch of %d spans went out as soon as the full one had", n)
	case n := <-held:
		if n != 1 {
			t.Fatalf("%d spans held, want 1", n)
		}
	}
	spans(3) // with the one held: a full batch
	if n := <-g.entered; n != 4 {
		t.Fatalf("third batch of %d spans, want 4", n)
	}
	g.release <- struct{}{}
	spans(2)
	done := make(chan error, 1)
	go func() { done <- b.shutdown(context.Background()) }()
	if n := <-g.entered; n != 2 {
		t.Fatalf("Shutdown flushed %d spans, want 2", n)
	}
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
