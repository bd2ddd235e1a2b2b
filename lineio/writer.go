package lineio

import (
	"bytes"
	"io"
	"sync"
)

// A Writer writes newline-delimited messages. It is safe for concurrent use:
// each message, with its terminator, goes to the underlying writer in one
// Write call, so messages from different goroutines never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte // msg + '\n', reused; guarded by mu
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// maxRetainedBuf bounds the buffer a Writer keeps between messages, so that
// one 16 MiB result does not pin 16 MiB for the life of the process.
const maxRetainedBuf = 1 << 20

// Write writes msg followed by "\n". It returns ErrEmbeddedNewline, writing
// nothing, if msg contains '\n' or '\r': stdio peers would see two messages.
func (w *Writer) Write(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return ErrEmbeddedNewline
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(append(w.buf[:0], msg...), '\n')
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > maxRetainedBuf {
		w.buf = nil
	}
	return err
}
