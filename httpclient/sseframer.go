package httpclient

import (
	"bytes"
	"io"

	"github.com/r3labs/sse/v2"
)

// How this package uses r3labs/sse/v2, and why not as designed — the one
// place that says so.
//
// r3labs/sse/v2 is designed as a subscribing client: sse.Client opens the
// GET itself, reconnects with its own backoff and hands events to callbacks
// or channels from goroutines it starts. None of that fits a bridge: the
// stream is the body of a POST or a GET this package made (with the
// caller's headers, the outbound redirect policy, the MCP session), MCP
// says how to resume (Last-Event-ID, retry, the limits in stream.go), and
// the package starts no goroutines and bounds every buffer. So only its
// framer is used: sse.EventStreamReader, a bufio.Scanner that splits a body
// into raw event blocks at blank lines. Three workarounds sit around it, in
// this file and in the parser it feeds:
//
//  1. Field parsing. The framer's field parser is a method of sse.Client,
//     unexported, and lenient where WHATWG is strict: it drops blank lines
//     inside a block (mixed "\n\r" endings hide a dispatch there), keeps
//     an id containing NUL (to be ignored), keeps a retry that is not all
//     digits, and copies every field. parseEvent (sse.go) applies the
//     WHATWG rules to the framer's blocks in place.
//  2. Quadratic rescans. The scanner's split function searches the whole
//     buffered data for a blank line after every Read: a big event arriving
//     in small reads costs O(n²). fillReader coalesces reads until the new
//     bytes could end an event.
//  3. Errors read as a clean end. The scanner passes any read error to the
//     split function as "at EOF": the framer then returns the unterminated
//     rest of its buffer as a final event (a truncated message after a
//     reset) and reports io.EOF, also for a read cut by a cancelled
//     context. fillReader keeps the body's real error and its last bytes;
//     framer.next reads one block ahead after a failure to drop a cut-short
//     last event, and Response.fail reports bodyErr (or the context's)
//     instead of io.EOF.
//
// Replacing the framer (a scanner over fillReader would do) is one file's
// change; the benchmark in sse_bench_test.go compares the two paths.

// A framer splits an SSE body into raw event blocks.
type framer struct {
	events *sse.EventStreamReader
	fill   *fillReader // nil only in tests that compare against the bare framer

	own      []byte // reused copy of a block read after a body error
	ahead    []byte // the block after own, read ahead
	aheadErr error  // or the error after own
	hasAhead bool
}

func newFramer(body io.Reader, maxEvent int) *framer {
	f := &framer{fill: &fillReader{r: body}}
	f.events = sse.NewEventStreamReader(f.fill, maxEvent)
	return f
}

// next returns the next raw event block. truncated reports a block whose
// final event (the part after its last blank line) the framer handed out
// only because the body failed: that event was cut short and must be
// dropped, so that the caller resumes from the last complete event.
func (f *framer) next() (raw []byte, truncated bool, err error) {
	if f.hasAhead {
		raw, err, f.ahead, f.aheadErr, f.hasAhead = f.ahead, f.aheadErr, nil, nil, false
	} else {
		raw, err = f.events.ReadEvent()
	}
	if err != nil || f.fill == nil || f.fill.err == nil {
		return raw, false, err
	}
	// The body has failed, so the framer only splits what it buffered; only
	// the last block can be cut short. Read ahead to learn whether raw is
	// the last one, after copying it out of the framer's buffer.
	f.own = append(f.own[:0], raw...)
	f.ahead, f.aheadErr = f.events.ReadEvent()
	f.hasAhead = true
	return f.own, f.aheadErr != nil && !f.fill.endsAtBoundary(), nil
}

// bodyErr is the error the body failed with, which the framer reported as
// io.EOF; nil when the body ended cleanly (or was read without fillReader).
func (f *framer) bodyErr() error {
	if f.fill == nil {
		return nil
	}
	return f.fill.err
}

// fillReader makes large reads out of small ones for the r3labs framer.
//
// The framer is a bufio.Scanner whose split function searches the whole
// buffered data for a blank line after every Read, which is quadratic when a
// big event arrives in small reads. The scanner only calls Read when the
// buffered data holds no complete event, so until the new bytes could
// complete one, reading on cannot delay an event: fillReader keeps filling p
// and returns as soon as the new bytes might end an event, or on error.
//
// Every blank-line sequence the framer accepts ("\r\r", "\n\n", "\r\n\n",
// "\n\r\n", "\r\n\r\n") contains "\r\r", "\n\n" or "\n\r". A sequence that
// ends inside a new chunk either lies wholly in it, so the chunk contains one
// of those pairs, or began in earlier data, so the chunk starts with a line
// ending. mayEndEvent tests exactly that.
//
// fillReader also remembers the first read error other than io.EOF and the
// last bytes it delivered. The scanner passes any read error to the split
// function as "at EOF", and r3labs then returns the unterminated rest of the
// buffer as a final event: after a connection reset that is a truncated
// message. With the tail the Response can tell whether such a rest exists.
type fillReader struct {
	r    io.Reader
	err  error   // first read error other than io.EOF
	tail [3]byte // the last bytes delivered, right-aligned
	n    int64   // bytes delivered so far
}

func (f *fillReader) Read(p []byte) (int, error) {
	n, empties := 0, 0
	for n < len(p) {
		m, err := f.r.Read(p[n:])
		end := m > 0 && mayEndEvent(p[n:n+m])
		n += m
		if err != nil || end {
			f.record(p[:n], err)
			return n, err
		}
		// Only consecutive empty reads mean no progress: a body that
		// returns (0, nil) now and then between small chunks is slow, not
		// stuck, however many chunks one large p takes.
		if m > 0 {
			empties = 0
		} else if empties++; empties >= 100 {
			f.record(p[:n], io.ErrNoProgress)
			return n, io.ErrNoProgress
		}
	}
	f.record(p[:n], nil)
	return n, nil
}

func (f *fillReader) record(p []byte, err error) {
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	if len(p) >= len(f.tail) {
		copy(f.tail[:], p[len(p)-len(f.tail):])
	} else if len(p) > 0 {
		copy(f.tail[:], f.tail[len(p):])
		copy(f.tail[len(f.tail)-len(p):], p)
	}
	f.n += int64(len(p))
}

// endsAtBoundary reports whether the bytes delivered so far end with one of
// the framer's blank-line sequences, i.e. leave no unterminated event.
func (f *fillReader) endsAtBoundary() bool {
	t := f.tail[:]
	if f.n < int64(len(t)) {
		t = t[len(t)-int(f.n):]
	}
	return len(t) == 0 || bytes.HasSuffix(t, []byte("\n\n")) ||
		bytes.HasSuffix(t, []byte("\r\r")) || bytes.HasSuffix(t, []byte("\n\r\n"))
}

// mayEndEvent reports whether chunk, appended to data without a complete
// event, might complete one (see fillReader).
func mayEndEvent(chunk []byte) bool {
	if len(chunk) > 0 && (chunk[0] == '\n' || chunk[0] == '\r') {
		return true
	}
	// Fast path for the common case, a long JSON line without line breaks.
	if bytes.IndexByte(chunk, '\n') < 0 && bytes.IndexByte(chunk, '\r') < 0 {
		return false
	}
	return bytes.Contains(chunk, []byte("\n\n")) ||
		bytes.Contains(chunk, []byte("\r\r")) ||
		bytes.Contains(chunk, []byte("\n\r"))
}
