package wire

import "encoding/binary"

// Valid reports whether b is one JSON value (RFC 8259) with optional
// whitespace around it, exactly as encoding/json's Valid does — the same
// answer for every input, nesting limit included (FuzzValid checks it) —
// but several times faster on what MCP carries most: long strings (base64
// images, file contents), which it crosses eight bytes at a time. A bridge
// that validates every message whole, whatever its size, must not pay
// more for it than for relaying the message.
//
// Like encoding/json, it does not check that strings are valid UTF-8: both
// decoders replace bad bytes rather than refuse them.
func Valid(b []byte) bool {
	var buf [64]byte
	stack := buf[:0] // '{' or '[' of every open container
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		default:
			if i = skipNumber(b, i); i < 0 {
				return false
			}
		}
		// A value ended before i: close containers until the next value.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// member reads an object member's key and colon at i and returns where its
// value starts (after whitespace), or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// validString checks the string whose opening quote is at i (escapes,
// control characters) and returns the index after its closing quote, or
// -1. Parse's skipString only finds the closing quote.
func validString(b []byte, i int) int {
	i++
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character.
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !hex4(b[i+2:i+6]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}

func hex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any byte of w is '"', '\\' or below 0x20 (the
// classic SWAR tests: a zero byte after XOR with the character, a byte
// below n). It may not say which; validString looks byte by byte then.
func special(w uint64) bool {
	q := w ^ (ones * '"')
	s := w ^ (ones * '\\')
	return ((q-ones)&^q|(s-ones)&^s|(w-ones*0x20)&^w)&highs != 0
}
