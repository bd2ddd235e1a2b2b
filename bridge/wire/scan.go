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
// It is encoding/json's limit (maxNestingDepth, counted from the outermost
// value), so a message Parse accepts is never one a Go peer rejects as too
// deep, nor the other way round.
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
// (after whitespace). depth is the number of arrays and objects around the
// value.
func skipValue(b []byte, i, depth int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		return skipNested(b, i, depth)
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
// strings; it does not check commas and colons inside. depth is the number
// of arrays and objects around it.
func skipNested(b []byte, i, depth int) (int, error) {
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
			if depth+len(st) >= maxDepth {
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
	return walkObject(b, i, 0, func(key []byte, start int) (int, error) {
		end, err := skipValue(b, start, 1)
		if err == nil && fn != nil {
			err = fn(key, start, end)
		}
		return end, err
	})
}

// walkObject calls fn for each member of the object starting at b[i] (after
// whitespace) with the raw key (without quotes, escapes not decoded) and
// where the value starts; fn returns the index just past the value, so it
// can walk a nested object in the same pass as it skips it. depth is the
// number of arrays and objects around this one. walkObject returns the
// index just past the object.
func walkObject(b []byte, i, depth int, fn func(key []byte, start int) (int, error)) (int, error) {
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
		if vstart >= len(b) {
			return 0, ErrSyntax
		}
		vend, err := fn(key, vstart)
		if err != nil {
			return 0, err
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
		end, err := skipValue(b, start, 1)
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
