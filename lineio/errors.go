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

// TooLongError describes a skipped over-long line. It matches [ErrTooLong]
// with errors.Is.
type TooLongError struct {
	Limit int   // the reader's limit in bytes
	Size  int64 // the length of the skipped line, without its terminator
	// Head and Tail are copies of the line's first and last bytes (up to
	// HeadSize each): enough for a caller to find a JSON-RPC id, which
	// SDKs write first or last, and answer the skipped request.
	Head, Tail []byte
}

// HeadSize bounds TooLongError.Head and Tail.
const HeadSize = 1024

func (e *TooLongError) Error() string {
	return fmt.Sprintf("lineio: line of %d bytes exceeds the %d-byte limit", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLong) true.
func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }
