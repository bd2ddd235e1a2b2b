package lineio

import (
	"errors"
	"fmt"
)

var (
	// ErrTooLong reports a line longer than the reader's limit. The reader has
	// already discarded the rest of that line, so the caller may report the
	// error and keep reading.
	ErrTooLong = errors.New("lineio: line too long")

	// ErrEmbeddedNewline reports a message handed to [Writer.Write] that
	// contains '\n' or '\r'; writing it would split it into two messages.
	ErrEmbeddedNewline = errors.New("lineio: message contains a newline")
)

// PeekSize is how much of each end of a skipped line a [TooLongError]
// keeps.
const PeekSize = 4 << 10

// TooLongError describes a skipped over-long line. It matches [ErrTooLong]
// with errors.Is.
type TooLongError struct {
	Limit int   // the reader's limit in bytes
	Size  int64 // the length of the skipped line, without its terminator

	// Head and Tail are copies of the first and the last PeekSize bytes of
	// the line (the whole line when it is shorter; they overlap when it is
	// shorter than twice that). A skipped message is not lost without a
	// trace: whoever sent it may be waiting for an answer, and the ends of
	// a message are where its envelope is (a JSON-RPC id comes first or
	// last in what the SDKs write).
	Head, Tail []byte
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("lineio: line of %d bytes exceeds the %d-byte limit", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLong) true.
func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }
