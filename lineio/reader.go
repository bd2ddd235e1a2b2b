package lineio

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLineSize is the limit a Reader applies when given a size of zero
// or less: 32 MiB, comfortably above the 16 MiB tool results the MCP SDKs
// accept.
const DefaultMaxLineSize = 32 << 20

const (
	minBuf  = 64 << 10 // initial buffer, and what a shrunk buffer returns to
	keepCap = 4 << 20  // a buffer grown past this is released once it is idle
)

// A Reader reads newline-delimited messages. It is not safe for concurrent
// use: a stream has exactly one reader.
//
// It reads straight into one buffer of its own (no bufio layer), so a
// large message is copied from the kernel once, plus the doublings of the
// buffer while it grows.
type Reader struct {
	r       io.Reader
	max     int
	buf     []byte
	start   int   // first unread byte
	end     int   // end of the data read
	scanned int   // bytes after start already searched for '\n'
	err     error // the read error that ends the input, once seen
	small   int   // consecutive short lines read with a big buffer
}

// NewReader returns a Reader that reads from r and rejects lines longer than
// max bytes (excluding the terminator). If max is zero or negative,
// DefaultMaxLineSize applies.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxLineSize
	}
	return &Reader{r: r, max: max}
}

// Reset makes the Reader read from r, discarding buffered data but keeping
// the buffer.
func (r *Reader) Reset(rd io.Reader) {
	r.r, r.start, r.end, r.scanned, r.err = rd, 0, 0, 0, nil
}

// Read returns the next line without its "\n" or "\r\n" terminator. Empty
// lines are skipped: they carry no message.
//
// The returned slice aliases the Reader's buffer and is valid only until
// the next call to Read; callers that keep it must copy it. This keeps
// framing free of per-message allocations.
//
// A line longer than the limit is discarded up to and including its
// terminator and reported as a *TooLongError (errors.Is ErrTooLong); the
// Reader stays usable. At the end of input Read returns io.EOF, or
// io.ErrUnexpectedEOF when the input stopped in the middle of a line: a
// message without its newline was never completed by the sender.
func (r *Reader) Read() ([]byte, error) {
	r.shrink()
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			nl := r.start + r.scanned + i
			line := r.buf[r.start:nl]
			r.start, r.scanned = nl+1, 0
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) > r.max {
				return nil, &TooLongError{Limit: r.max, Size: int64(len(line)),
					Head: clone(line[:min(len(line), PeekSize)]), Tail: clone(line[len(line)-min(len(line), PeekSize):])}
			}
			if len(line) == 0 {
				continue
			}
			if len(line) > minBuf {
				r.small = 0
			}
			return line, nil
		}
		r.scanned = r.end - r.start
		if r.scanned > r.max+1 { // +1: the line may still end in '\r'
			return nil, r.skip()
		}
		if r.err != nil {
			return nil, r.eof()
		}
		r.fill()
	}
}

// fill reads more input, making room first.
func (r *Reader) fill() {
	if r.start == r.end {
		r.start, r.end = 0, 0 // everything consumed: read into the whole buffer
	}
	if r.start > 0 && len(r.buf)-r.end < len(r.buf)/4 {
		// Move the partial line to the front before growing.
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		size := max(2*len(r.buf), minBuf)
		if size-2 > r.max {
			// Read skips a line once it holds max+2 bytes of it (the line,
			// a '\r' and one more byte): a larger buffer would never fill.
			size = max(r.max+2, minBuf)
		}
		nb := make([]byte, size)
		copy(nb, r.buf[r.start:r.end])
		r.buf, r.end, r.start = nb, r.end-r.start, 0
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	}
}

// skip discards the rest of an over-long line, keeping copies of its ends.
func (r *Reader) skip() error {
	data := r.buf[r.start:r.end] // all of it the line's: no '\n' in it
	head := append(make([]byte, 0, PeekSize), data[:min(len(data), PeekSize)]...)
	tail := keepTail(make([]byte, 0, PeekSize+1), data)
	size := int64(len(data))
	for {
		r.start, r.end, r.scanned = 0, 0, 0
		if r.err != nil {
			if errors.Is(r.err, io.EOF) {
				return io.ErrUnexpectedEOF // the long line never ended
			}
			return r.err
		}
		r.fill()
		i := bytes.IndexByte(r.buf[:r.end], '\n')
		part := r.buf[:r.end]
		if i >= 0 {
			part = r.buf[:i]
		}
		size += int64(len(part))
		head = append(head, part[:min(len(part), PeekSize-len(head))]...)
		tail = keepTail(tail, part)
		if i < 0 {
			continue
		}
		if n := len(tail); n > 0 && tail[n-1] == '\r' { // the terminator's, even when it came in the previous read
			tail = tail[:n-1]
			size--
		}
		if len(tail) > PeekSize {
			tail = tail[1:]
		}
		if int64(len(head)) > size {
			head = head[:size]
		}
		r.start = i + 1
		return &TooLongError{Limit: r.max, Size: size, Head: head, Tail: tail}
	}
}

// keepTail appends p to tail and keeps the last PeekSize+1 bytes: the
// line's last PeekSize and a '\r' that may turn out to be the terminator's.
func keepTail(tail, p []byte) []byte {
	const keep = PeekSize + 1
	if len(p) >= keep {
		return append(tail[:0], p[len(p)-keep:]...)
	}
	if drop := len(tail) + len(p) - keep; drop > 0 {
		tail = tail[:copy(tail, tail[drop:])]
	}
	return append(tail, p...)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func (r *Reader) eof() error {
	partial := r.end > r.start
	r.start, r.end, r.scanned = 0, 0, 0
	if errors.Is(r.err, io.EOF) {
		if partial {
			return io.ErrUnexpectedEOF
		}
		return io.EOF
	}
	return r.err
}

// idleReads is how many short lines a grown buffer survives: a stream that
// carries large results keeps its buffer (regrowing it costs a copy and a
// zeroing per doubling), one that had a single burst gives it back.
const idleReads = 256

// shrink releases a buffer that grew for large messages once it has held
// only short ones for a while, so a burst does not pin tens of MiB for the
// life of the stream.
func (r *Reader) shrink() {
	if cap(r.buf) <= keepCap {
		return
	}
	if r.end-r.start > minBuf {
		r.small = 0
		return
	}
	if r.small++; r.small < idleReads {
		return
	}
	r.small = 0
	nb := make([]byte, minBuf)
	r.end = copy(nb, r.buf[r.start:r.end])
	r.buf, r.start = nb, 0
}
