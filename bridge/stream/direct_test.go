package stream

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A direct stream whose reader is behind holds its messages charged to
// the budget, as a stream blocked on a slow HTTP client does: past the
// stream's bound it is cut, and the delivery waiting on the reader is
// aborted. What was delivered is the reader's: it left the budget.
func TestPumpDirectCutWhenBehind(t *testing.T) {
	l := testLimits(1<<20, 100)
	sk := l.NewSink(-1)
	delivered := make(chan []byte, 1) // the reader takes one message, then stops
	waiting := make(chan struct{})
	res := make(chan PumpResult, 1)
	n := 0
	go func() {
		res <- PumpDirect(context.Background(), sk, nil, nil, func(msg []byte, abort <-chan struct{}) error {
			if n++; n == 1 {
				delivered <- msg
				return nil
			}
			close(waiting)
			<-abort
			return errors.New("aborted")
		})
	}()
	sk.Push(make([]byte, 60), false)
	<-delivered
	sk.Push(make([]byte, 60), false) // taken, and held while its delivery waits
	<-waiting
	l.mu.Lock()
	held := l.buffered
	l.mu.Unlock()
	if held != 60 {
		t.Errorf("held %d bytes while the reader is behind, want 60", held)
	}
	sk.Push(make([]byte, 60), false) // over the stream's bound: cut
	select {
	case r := <-res:
		if r != PumpClientGone {
			t.Errorf("pump ended with %v, want PumpClientGone", r)
		}
	case <-time.After(10 * time.Second): // a wide margin: the cut is immediate
		t.Fatal("the cut did not end the waiting delivery")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buffered != 0 {
		t.Errorf("%d bytes still held after the cut", l.buffered)
	}
}

// A direct stream delivers what is queued when it is stopped, then ends.
func TestPumpDirectStopDelivers(t *testing.T) {
	sk := NewSink(-1)
	stop := make(chan struct{})
	sk.Push([]byte("a"), false)
	var got []string
	first := true
	r := PumpDirect(context.Background(), sk, stop, nil, func(msg []byte, _ <-chan struct{}) error {
		got = append(got, string(msg))
		if first {
			first = false
			sk.Push([]byte("b"), false)
			close(stop)
		}
		return nil
	})
	if r != PumpStopped || len(got) != 2 || got[1] != "b" {
		t.Errorf("pump %v, delivered %q: want PumpStopped after a and b", r, got)
	}
}
