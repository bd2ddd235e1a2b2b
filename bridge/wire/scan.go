package wire

import (
	"bytes"
	"errors"
)

// ErrSyntax reports bytes that are not a JSON-RPC message shape Parse can
// walk.
var ErrSyntax = errors.New("wire: malformed JSON")

// maxDepth bounds nesting so hostile input cannot make the skipper loop
// over a deep structure for long; real MCP messages nest a few dozen levels.
const maxDepth = 10000

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i]=='"'.
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, ErrSyntax
		}
		end := i + j
		// The quote is escaped if an odd number of backslashes precede it.
		n := 0
		for k := end - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return end + 1, nil
		}
		i = end + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i]
// (after whitespace).
func skipValue(b []byte, i int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		return skipNested(b, i)
	default:
		// A literal or number: runs until a delimiter.
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || isSpace(c) {
				break
			}
			if c == '"' || c == '{' || c == '[' || c == ':' {
				return 0, ErrSyntax
			}
			j++
		}
		if j == i {
			return 0, ErrSyntax
		}
		return j, nil
	}
}

// skipNested skips an object or array by matching brackets, jumping over
// strings; it does not check commas and colons inside.
func skipNested(b []byte, i int) (int, error) {
	var stack [64]byte
	st := stack[:0]
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case '{', '[':
			if len(st) >= maxDepth {
				return 0, ErrSyntax
			}
			st = append(st, c)
		case '}', ']':
			if len(st) == 0 || (c == '}') != (st[len(st)-1] == '{') {
				return 0, ErrSyntax
			}
			st = st[:len(st)-1]
			if len(st) == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return 0, ErrSyntax
}

// objectFields calls fn for each member of the object starting at b[i] with
// the raw key (without quotes, escapes not decoded) and the value's span. It
// returns the index just past the object.
func objectFields(b []byte, i int, fn func(key []byte, start, end int) error) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, ErrSyntax
		}
		kend, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrSyntax
		}
		vstart := skipSpace(b, i+1)
		vend, err := skipValue(b, vstart)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(key, vstart, vend); err != nil {
				return 0, err
			}
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, ErrSyntax
		}
	}
}

// memberStart returns where the object member whose value starts at
// valueStart begins, at the opening quote of its key. objectFields hands
// the key out raw (escapes not decoded), so it spans len(key) bytes of b;
// only whitespace and the colon lie between it and the value.
func memberStart(b, key []byte, valueStart int) int {
	colon := bytes.LastIndexByte(b[:valueStart], ':')
	keyEnd := len(bytes.TrimRight(b[:colon], " \t\r\n")) // just past the closing quote
	return keyEnd - len(key) - 2
}

// arrayElems calls fn with the span of each element of the array at b[i].
func arrayElems(b []byte, i int, fn func(start, end int) error) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, ErrSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		start := skipSpace(b, i)
		end, err := skipValue(b, start)
		if err != nil {
			return 0, err
		}
		if err := fn(start, end); err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, nil
		default:
			return 0, ErrSyntax
		}
	}
}
