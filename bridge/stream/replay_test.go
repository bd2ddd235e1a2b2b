package stream

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

// The replay log stays within its bounds, by bytes and by count, and
// drops the oldest events first.
func TestReplayLogBounds(t *testing.T) {
	l := NewReplayLog(1000, nil)
	st := l.Open(NewSink(1), true)
	for i := 0; i < 50; i++ {
		l.record(st, make([]byte, 100))
	}
	if l.bytes > 1000 || len(l.events) != 10 || l.events[0].seq != 41 {
		t.Fatalf("by bytes: %d bytes, %d events, oldest %d", l.bytes, len(l.events), l.events[0].seq)
	}
	l = NewReplayLog(1<<30, nil)
	st = l.Open(NewSink(1), true)
	for i := 0; i < maxReplayEvents+10; i++ {
		l.record(st, []byte("x"))
	}
	if len(l.events) != maxReplayEvents {
		t.Fatalf("by count: %d events", len(l.events))
	}
	// A resume after an evicted event reports the gap.
	l.LetGo(st, true)
	missed, cont, gap, known := l.Takeover(st.no, 3, nil)
	if !known || !gap || len(missed) != maxReplayEvents || cont != st {
		t.Fatalf("takeover after eviction: known %v gap %v missed %d", known, gap, len(missed))
	}
	if NewReplayLog(-1, nil) != nil {
		t.Error("a negative buffer must disable the log")
	}
}

// At most maxParked broken POST streams wait for resumption; the oldest
// goes first and its sink refuses further messages.
func TestReplayParkedBound(t *testing.T) {
	l := NewReplayLog(1<<20, nil)
	var sinks []*Sink
	for i := 0; i <= maxParked; i++ {
		sk := NewSink(1)
		sinks = append(sinks, sk)
		if !l.LetGo(l.Open(sk, true), true) {
			t.Fatal("a pending stream was not parked")
		}
	}
	if len(l.parked) != maxParked || l.IsParked(sinks[0]) || !l.IsParked(sinks[maxParked]) {
		t.Fatalf("parked %d; oldest still parked: %v", len(l.parked), l.IsParked(sinks[0]))
	}
	if sinks[0].Push([]byte("x"), true) {
		t.Error("an evicted stream still takes messages")
	}
}

func TestParseEventID(t *testing.T) {
	for _, tc := range []struct {
		in          string
		stream, seq int64
		ok          bool
	}{
		{"3_17", 3, 17, true}, {"1_0", 1, 0, true},
		{"0_1", 0, 0, false}, {"3", 0, 0, false}, {"_1", 0, 0, false}, {"1_", 0, 0, false},
		{"+1_2", 0, 0, false}, {"1_+2", 0, 0, false}, {"1_-2", 0, 0, false}, {"1_2_3", 0, 0, false},
		{"99999999999999999999_1", 0, 0, false}, {" 1_2", 0, 0, false}, {"01_2", 0, 0, false},
	} {
		s, q, ok := ParseEventID(tc.in)
		if ok != tc.ok || s != tc.stream || q != tc.seq {
			t.Errorf("ParseEventID(%q) = %d, %d, %v", tc.in, s, q, ok)
		}
	}
}

// Whatever a client sends as Last-Event-ID, parsing neither panics nor
// accepts anything but an id the bridge could have issued.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"3_17", "1_0", "", "_", "1_2_3", "-1_2", "+1_2", "1_9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stream, seq, ok := ParseEventID(s)
		if ok && string(eventID(stream, seq)) != s {
			t.Fatalf("%q parsed as %d_%d", s, stream, seq)
		}
	})
}

// A stream the bridge ends (finish) writes what is still queued; those
// events live on in the replay log, so their buffers must not go back to
// the large-buffer pool, where the next large message would overwrite the
// bytes a resume replays.
func TestFinishKeepsLoggedBuffers(t *testing.T) {
	l := NewReplayLog(64<<20, nil)
	sk := NewSink(-1)
	st := l.Open(sk, false)
	rsp := NewResponder(httptest.NewRecorder(), false)
	rsp.Resumable(l, st, false)
	msg := append(GetBuf(bigMessage), bytes.Repeat([]byte("a"), bigMessage)...)
	sk.Push(msg, false)
	rsp.finish(sk)
	if len(l.events) != 1 {
		t.Fatalf("%d events logged, want 1", len(l.events))
	}
	// Whatever the pool hands out now is the next large message's buffer.
	for range 4 {
		b := GetBuf(bigMessage)
		b = b[:cap(b)]
		for i := range b {
			b[i] = 'z'
		}
	}
	if bytes.IndexByte(l.events[0].msg, 'z') >= 0 {
		t.Fatal("a logged event was overwritten: its buffer went back to the pool")
	}
}

// The logs of all sessions share one budget: over it, the largest log
// gives up its oldest events (the newest are kept), and a log that ends
// returns its bytes.
func TestReplayBudgetShared(t *testing.T) {
	b := NewReplayBudget(1000)
	x, y := NewReplayLog(1000, b), NewReplayLog(1000, b)
	sx, sy := x.Open(NewSink(1), true), y.Open(NewSink(1), true)
	for i := 0; i < 8; i++ {
		x.record(sx, make([]byte, 100))
	}
	for i := 0; i < 5; i++ {
		y.record(sy, make([]byte, 100))
	}
	if got := b.total.Load(); got > 1000 || got != int64(x.bytes+y.bytes) {
		t.Fatalf("total %d (x %d + y %d), want ≤ 1000 and their sum", got, x.bytes, y.bytes)
	}
	if len(y.events) != 5 || x.events[len(x.events)-1].seq != 8 || x.events[0].seq == 1 {
		t.Fatalf("y kept %d of 5; x kept seqs %d..%d: the largest log's oldest must go", len(y.events), x.events[0].seq, x.events[len(x.events)-1].seq)
	}
	x.Close()
	if got := b.total.Load(); got != 500 {
		t.Fatalf("after x ended: total %d, want y's 500", got)
	}
	if x.record(sx, make([]byte, 100)); b.total.Load() != 500 || len(x.events) != 0 {
		t.Fatal("an ended log still keeps events")
	}
}
