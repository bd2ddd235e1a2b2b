package lineio

import (
	"bufio"
	"errors"
	"io"
)

// DefaultMaxLineSize is the limit a Reader applies when given a size of zero
// or less: 32 MiB, comfortably above the 16 MiB tool results the MCP SDKs
// accept.
const DefaultMaxLineSize = 32 << 20

// A Reader reads newline-delimited messages. It is not safe for concurrent
// use: a stream has exactly one reader.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte // assembles lines longer than br's buffer; reused
}

// NewReader returns a Reader that reads from r and rejects lines longer than
// max bytes (excluding the terminator). If max is zero or negative,
// DefaultMaxLineSize applies.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxLineSize
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Read returns the next line without its "\n" or "\r\n" terminator. Empty
// lines are skipped: they carry no message.
//
// The returned slice aliases the Reader's buffers and is valid only until the
// next call to Read; callers that keep it must copy it. This keeps framing
// free of per-message allocations.
//
// A line longer than the limit is discarded up to and including its
// terminator and reported as a *TooLongError (errors.Is ErrTooLong); the
// Reader stays usable. At the end of input Read returns io.EOF, or
// io.ErrUnexpectedEOF when the input stopped in the middle of a line: a
// message without its newline was never completed by the sender.
func (r *Reader) Read() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

func (r *Reader) readLine() ([]byte, error) {
	frag, err := r.br.ReadSlice('\n')
	if err == nil {
		// Fast path: the whole line sits in bufio's buffer.
		line := trimEOL(frag)
		if len(line) > r.max {
			return nil, &TooLongError{Limit: r.max, Size: int64(len(line))}
		}
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, r.eofError(frag, err)
	}
	r.buf = append(r.buf[:0], frag...)
	for {
		if len(r.buf) > r.max+1 { // +1: the line may end with '\r'
			return nil, r.skip(int64(len(r.buf)))
		}
		frag, err = r.br.ReadSlice('\n')
		r.buf = append(r.buf, frag...)
		if err == nil {
			line := trimEOL(r.buf)
			if len(line) > r.max {
				return nil, &TooLongError{Limit: r.max, Size: int64(len(line))}
			}
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, r.eofError(r.buf, err)
		}
	}
}

// skip discards the rest of an over-long line.
func (r *Reader) skip(n int64) error {
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		n += int64(len(frag))
		if err == nil {
			return &TooLongError{Limit: r.max, Size: n - int64(len(frag)-len(trimEOL(frag)))}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

func (r *Reader) eofError(partial []byte, err error) error {
	if err == io.EOF && len(partial) > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
