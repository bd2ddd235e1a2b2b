package lineio

import (
	"bytes"
	"io"
	"sync"
)

// A Writer writes newline-delimited messages. It is safe for concurrent
// use, and messages never interleave.
//
// Concurrent writers are combined: while one goroutine is in the
// underlying Write, the messages of the others queue up, and the next
// Write carries them all (group commit). Under load that turns one system
// call per message into one per batch; alone, a message costs one Write.
// Every Write call returns only once its message has been written, so the
// caller's slice is never retained.
type Writer struct {
	w io.Writer

	mu      sync.Mutex
	queue   [][]byte // messages waiting for the next flush, by reference
	spare   [][]byte // the other queue, reused
	group   *group   // the writers of the queued messages
	writing bool     // a goroutine is flushing
	err     error    // the first write error: the stream is broken from then on
	buf     []byte   // scratch for joining small messages
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, group: newGroup()}
}

const (
	// bigMessage is the size from which a message is written from the
	// caller's slice instead of being copied into the batch buffer.
	bigMessage = 64 << 10
	// maxRetainedBuf bounds the scratch buffer kept between batches.
	maxRetainedBuf = 1 << 20
)

// Write writes msg followed by "\n". It returns ErrEmbeddedNewline, writing
// nothing, if msg contains '\n' or '\r': stdio peers would see two messages.
func (w *Writer) Write(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return ErrEmbeddedNewline
	}
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.queue = append(w.queue, msg)
	if w.writing {
		// The flusher takes this message with its next batch. Each batch
		// has its own group, so a flush wakes the writers it carried and
		// no one else, and they leave without taking the lock again: with
		// one shared condition, every flush woke every waiting writer
		// (1,024 of them at 1,024 calls in flight) to queue for the lock,
		// and all but the batch's own went back to sleep.
		g := w.group
		g.waiters++
		w.mu.Unlock()
		<-g.done
		return g.err
	}
	// Become the flusher until the queue is empty.
	w.writing = true
	for len(w.queue) > 0 {
		batch, g := w.queue, w.group
		w.queue = w.spare[:0]
		if g.waiters > 0 {
			w.group = newGroup()
		} else {
			g = nil // nobody waits for this batch: the group stays for the next
		}
		w.mu.Unlock()
		var err error
		if w.err == nil {
			err = w.flush(batch)
		}
		clear(batch) // do not keep the callers' slices alive
		w.mu.Lock()
		w.spare = batch[:0]
		if err != nil && w.err == nil {
			// A pipe or terminal that failed once stays failed: every
			// message after it is refused with the same error.
			w.err = err
		}
		if g != nil {
			g.err = w.err
			close(g.done)
		}
	}
	w.writing = false
	err := w.err
	w.mu.Unlock()
	return err
}

// A group is the writers waiting for the messages of one batch: done is
// closed once it is written, after err is set. A batch nobody waits for
// (the flusher's own message alone) allocates none.
type group struct {
	done    chan struct{}
	err     error
	waiters int // guarded by Writer.mu until done is closed
}

func newGroup() *group { return &group{done: make(chan struct{})} }

// flush writes a batch: small messages are joined into one buffer (one
// Write); a big one goes out from its own slice, with the newline appended
// to what follows.
func (w *Writer) flush(batch [][]byte) error {
	b := w.buf[:0]
	for _, msg := range batch {
		if len(msg) < bigMessage {
			b = append(append(b, msg...), '\n')
			continue
		}
		if len(b) > 0 {
			if _, err := w.w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		if _, err := w.w.Write(msg); err != nil {
			return err
		}
		b = append(b, '\n')
	}
	var err error
	if len(b) > 0 {
		_, err = w.w.Write(b)
	}
	if cap(b) <= maxRetainedBuf {
		w.buf = b[:0]
	} else {
		w.buf = nil
	}
	return err
}
