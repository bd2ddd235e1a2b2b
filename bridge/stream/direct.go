package stream

import (
	"context"
	"sync"
)

// PumpDirect is Pump for a client in the same process (serve's in-process
// entry), which takes messages, not an HTTP response: each message of sk
// goes to deliver as it was pushed, with no SSE framing to write and read
// back, no keepalive and no replay log. It runs in the caller's goroutine
// until sk is complete, deliver fails, ctx ends (the client went away), or
// stop or stop2 is closed (nil channels never fire; what is queued then is
// still delivered).
//
// deliver may block while its reader is behind, as a write to a client
// that does not read does: the message stays charged to the budget
// meanwhile, and the budget's cut (or Close of the sink's stream) closes
// abort, which must end such a wait with an error. A message delivered
// belongs to deliver's reader from then on: it leaves the budget, and its
// buffer is not recycled.
func PumpDirect(ctx context.Context, sk *Sink, stop, stop2 <-chan struct{}, deliver func(msg []byte, abort <-chan struct{}) error) PumpResult {
	abort := make(chan struct{})
	var once sync.Once
	sk.setAbort(func() { once.Do(func() { close(abort) }) })
	defer sk.setAbort(nil)
	for {
		msgs, complete, overrun := sk.take()
		if overrun {
			sk.drop(msgs)
			return PumpClientGone
		}
		if !deliverAll(sk, msgs, abort, deliver) {
			return PumpClientGone
		}
		if complete {
			return PumpComplete
		}
		select {
		case <-sk.wake:
			continue
		case <-ctx.Done():
			return PumpClientGone
		case <-stop:
		case <-stop2:
		}
		msgs, complete, _ = sk.take()
		switch {
		case !deliverAll(sk, msgs, abort, deliver):
			return PumpClientGone
		case complete:
			return PumpComplete
		}
		return PumpStopped
	}
}

// deliverAll delivers msgs taken from sk in order, and reports whether
// all went.
func deliverAll(sk *Sink, msgs [][]byte, abort <-chan struct{}, deliver func([]byte, <-chan struct{}) error) bool {
	for i, m := range msgs {
		if deliver(m, abort) != nil {
			sk.drop(msgs[i:])
			return false
		}
		sk.keep(msgs[i : i+1])
	}
	return true
}
