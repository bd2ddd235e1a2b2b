package httpclient

import (
	"bytes"
	"io"
	"time"
)

// This file holds the SSE field parser and a read-coalescing reader that sit
// on top of r3labs/sse/v2's framer. The framer (sse.EventStreamReader) splits
// the stream into raw event blocks at blank lines; its own field parser is
// unexported and deviates from the WHATWG rules, hence parseEvent.

// sseEvent holds the fields of one event. Its slices alias the block given
// to parseEvent or the caller's join buffer.
type sseEvent struct {
	data     []byte // data lines joined with "\n"
	hasData  bool   // at least one data field, possibly empty
	event    []byte // the event name, nil if none
	id       []byte
	hasID    bool
	retry    time.Duration
	hasRetry bool
}

// parseEvent applies the WHATWG "interpret an event stream" field rules
// (html.spec.whatwg.org, server-sent events §9.2.6) to block, up to its first
// empty line or its end, and returns the event, the rest of the block, and
// whether an empty line ended the event (rather than the end of block).
// The framer normally leaves no empty line inside a block, but mixed line
// endings such as "\n\r" are blank lines it does not split on; the caller
// parses the rest as further events.
//
// Lines end in "\r\n", "\n" or "\r". A line starting with ':' is a comment.
// The field name runs to the first ':'; one space after it is dropped; a line
// without ':' is a field with an empty value. Several data fields are joined
// with "\n" in *buf, which is reused; a single data field aliases block.
func parseEvent(block []byte, buf *[]byte) (ev sseEvent, rest []byte, blank bool) {
	ndata := 0
	for len(block) > 0 {
		var line []byte
		line, block = cutLine(block)
		if len(line) == 0 {
			return ev, block, true // blank line: dispatch
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) { // no allocation: the compiler compares in place
		case "data":
			switch ndata {
			case 0:
				ev.data = value
			case 1:
				*buf = append(append(append((*buf)[:0], ev.data...), '\n'), value...)
				ev.data = *buf
			default:
				*buf = append(append(*buf, '\n'), value...)
				ev.data = *buf
			}
			ndata++
			ev.hasData = true
		case "event":
			ev.event = value
		case "id":
			// WHATWG: "If the field value does not contain U+0000 NULL, then
			// set the last event ID buffer to the field value."
			if bytes.IndexByte(value, 0) < 0 {
				ev.id, ev.hasID = value, true
			}
		case "retry":
			if d, ok := parseRetry(value); ok {
				ev.retry, ev.hasRetry = d, true
			}
		}
	}
	return ev, block, false
}

// cutLine splits off the first line of b and its terminator. Two IndexByte
// calls keep a multi-megabyte data line fast.
func cutLine(b []byte) (line, rest []byte) {
	end := len(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		end = i
	}
	if i := bytes.IndexByte(b[:end], '\r'); i >= 0 {
		end = i
	}
	switch {
	case end == len(b):
		return b, nil
	case b[end] == '\r' && end+1 < len(b) && b[end+1] == '\n':
		return b[:end], b[end+2:]
	}
	return b[:end], b[end+1:]
}

// maxRetryMillis only keeps Duration arithmetic from overflowing (~106 days).
const maxRetryMillis = 1 << 33

// parseRetry reads a retry field: WHATWG "If the field value consists of only
// ASCII digits, then interpret the field value as an integer in base ten" (a
// number of milliseconds); anything else, including an empty value, is
// ignored.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms < maxRetryMillis {
			ms = ms*10 + int64(c-'0')
		}
	}
	return time.Duration(min(ms, maxRetryMillis)) * time.Millisecond, true
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
		if m == 0 {
			if empties++; empties >= 100 {
				f.record(p[:n], io.ErrNoProgress)
				return n, io.ErrNoProgress
			}
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
