package stream

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"
)

func testLimits(maxBuffered, perStream int64) *Limits {
	return NewLimits(zerolog.Nop(), &ratelog.Kinds{}, math.MaxInt64, maxBuffered, perStream)
}

func budgetSink(l *Limits, want int) (*Sink, *atomic.Int32) {
	s := NewSink(want)
	s.lim = l
	var aborts atomic.Int32
	s.setAbort(func() { aborts.Add(1) })
	return s, &aborts
}

// One stream holds one message, or a queue up to --max-message-size; a
// client that lets more pile up loses its stream, not the bridge its
// memory.
func TestSinkPerStreamBound(t *testing.T) {
	l := testLimits(1<<20, 100)
	s, aborts := budgetSink(l, -1)
	if !s.Push(make([]byte, 150), false) { // alone, a message always fits
		t.Fatal("first message refused")
	}
	if _, _, overrun := s.take(); overrun {
		t.Fatal("a single message overran the stream")
	}
	// Taken but not written (a blocked write): still held.
	s.Push(make([]byte, 10), false)
	if _, _, overrun := s.take(); !overrun || aborts.Load() != 1 {
		t.Fatalf("overrun %v, aborts %d: want the stream cut and its write aborted", overrun, aborts.Load())
	}
	if s.Push([]byte("x"), false) {
		t.Error("a cut stream took a message")
	}
}

// Past --max-buffered the stream holding the most is cut, its bytes come
// back to the budget, and new requests are refused while it is spent.
func TestBudgetCutsLargestHolder(t *testing.T) {
	l := testLimits(100, 1000)
	big, bigAborts := budgetSink(l, -1)
	small, smallAborts := budgetSink(l, -1)
	big.Push(make([]byte, 60), false)
	msgs, _, _ := big.take() // in a blocked write
	small.Push(make([]byte, 30), false)
	if l.spent() {
		t.Fatal("budget spent at 90 of 100 bytes")
	}
	small.Push(make([]byte, 20), false) // 110 > 100
	if bigAborts.Load() != 1 || smallAborts.Load() != 0 {
		t.Fatalf("aborts: big %d, small %d; want the largest holder cut", bigAborts.Load(), smallAborts.Load())
	}
	if !l.spent() {
		t.Error("budget not spent while the cut stream's write is still blocked")
	}
	big.drop(msgs) // the aborted write returns
	if l.spent() {
		t.Error("budget still spent after the cut stream let go")
	}
	m, _, overrun := small.take()
	if overrun || len(m) != 2 {
		t.Fatalf("the smaller stream lost its messages: %d, overrun %v", len(m), overrun)
	}
	small.drop(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buffered != 0 || len(l.holding) != 0 {
		t.Errorf("after every message was written: %d bytes held by %d streams, want 0", l.buffered, len(l.holding))
	}
}
