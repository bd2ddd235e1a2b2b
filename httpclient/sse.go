package httpclient

import (
	"bytes"
	"time"
)

// This file holds the SSE field parser, which reads the raw event blocks
// r3labs/sse/v2's framer splits (sseframer.go says why the framer's own
// parser is not used).

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
