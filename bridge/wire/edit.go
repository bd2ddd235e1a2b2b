package wire

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// An Edit replaces Raw[Span.Start:Span.End] with Value.
type Edit struct {
	Span  Span
	Value []byte
}

// Splice returns a copy of raw with the edits applied. Edits must not
// overlap; they may come in any order. The result is always a fresh slice,
// so callers may keep it after raw's buffer is reused.
func Splice(raw []byte, edits ...Edit) []byte {
	return SpliceTo(nil, raw, edits...)
}

// SpliceTo is Splice appending to dst (which must not overlap raw), for
// callers that recycle buffers: a fresh 16 MiB allocation costs more in
// page faults than the copy itself.
func SpliceTo(dst, raw []byte, edits ...Edit) []byte {
	// Insertion sort: edits are few and nearly always in order already,
	// and sorting through a comparison func (an indirect call) would make
	// the compiler move every caller's edit values to the heap.
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].Span.Start < edits[j-1].Span.Start; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
	n := len(raw)
	for _, e := range edits {
		n += len(e.Value) - (e.Span.End - e.Span.Start)
	}
	out := slices.Grow(dst[:0], n)
	prev := 0
	for _, e := range edits {
		out = append(out, raw[prev:e.Span.Start]...)
		out = append(out, e.Value...)
		prev = e.Span.End
	}
	return append(out, raw[prev:]...)
}

// AppendInt appends the decimal form of n, the id form the bridge mints.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// AppendString appends s as a JSON string. It escapes only what JSON
// requires (quotes, backslashes, control characters) and replaces invalid
// UTF-8, so non-ASCII text stays readable on the wire.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		// A run of bytes that need no escape goes in one append: the
		// strings the bridge writes on every call (a traceparent, ids,
		// names) are mostly nothing else.
		j := i
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		dst = append(dst, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// plainByte marks the bytes AppendString copies as they are: ASCII that
// JSON strings may hold unescaped.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Standard JSON-RPC and MCP error codes.
const (
	CodeParseError         = -32700
	CodeInvalidRequest     = -32600
	CodeMethodNotFound     = -32601
	CodeInvalidParams      = -32602
	CodeInternalError      = -32603
	CodeHeaderMismatch     = -32020 // 2026-07-28
	CodeMissingCapability  = -32021 // 2026-07-28
	CodeUnsupportedVersion = -32022 // 2026-07-28
	CodeRequestTimeout     = -32001 // TypeScript SDK convention for a timed-out request
	CodeConnectionClosed   = -32000 // TypeScript SDK convention for a lost connection
)

// ErrorResponse builds a JSON-RPC error response. id is the raw id (nil
// means null, for errors about a message whose id is unknown); data, when
// non-nil, must be valid JSON.
func ErrorResponse(id []byte, code int, message string, data []byte) []byte {
	b := make([]byte, 0, 64+len(message)+len(data)+len(id))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = AppendString(b, message)
	if data != nil {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, "}}"...)
}

// ResultResponse builds {"jsonrpc":"2.0","id":<id>,"result":<result>}.
func ResultResponse(id, result []byte) []byte {
	b := make([]byte, 0, 36+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// Notification builds {"jsonrpc":"2.0","method":<method>,"params":<params>};
// params may be nil.
func Notification(method string, params []byte) []byte {
	b := make([]byte, 0, 48+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = AppendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// Request builds {"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>}.
func Request(id []byte, method string, params []byte) []byte {
	b := make([]byte, 0, 56+len(method)+len(params)+len(id))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = AppendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// Shifted returns m as it reads once d bytes have been inserted at offset
// at of m.Raw, raw being the result: the spans after at move by d, the
// spans around it grow by d. It is Parse's reading of raw (FuzzShifted)
// provided at lies between tokens and what was inserted is members of an
// object that the envelope does not route on — an edit such as
// InsertFields of traceparent into _meta — and saves reading the whole
// message again.
func (m *Message) Shifted(raw []byte, at, d int) Message {
	out := *m
	out.Raw = raw
	for _, s := range [...]*Span{&out.ID, &out.Params, &out.Result, &out.Error, &out.Arguments,
		&out.Meta, &out.RequestID, &out.ProgressToken, &out.SubscriptionID} {
		switch {
		case !s.Present():
		case s.Start >= at:
			s.Start += d
			s.End += d
		case s.End > at:
			s.End += d
		}
	}
	return out
}
