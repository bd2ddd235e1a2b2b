package connect

import (
	"encoding/json"

	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// An over-long host line is skipped unread, but the request in it still
// deserves its own answer: "the server MUST send a response ... with the
// same ID" (JSON-RPC requests), and an error with a null id answers none
// of the host's requests. The reader keeps the line's first and last
// bytes; SDKs write the id near one end (the Go and Python SDKs after
// "jsonrpc", the TypeScript SDKs last, after the params). A request is
// only answered when its "method" key and its id are both read at the top
// level of the object: anything else (a response, a notification, bytes
// that are no JSON-RPC) gets the null-id error it always got.

// skippedID returns the id of the request in a skipped line, or nil.
func skippedID(tl *lineio.TooLongError) []byte {
	keys := topKeys(tl.Head)
	if keys.method == nil {
		return nil
	}
	if keys.id != nil {
		return keys.id
	}
	return lastID(tl.Tail)
}

// headKeys is what topKeys read of an object's top-level members.
type headKeys struct {
	id, method []byte // raw values, nil when not read
}

// topKeys reads the top-level members of the JSON object at the start of
// b, as far as b goes, and keeps the id and the method.
func topKeys(b []byte) headKeys {
	var k headKeys
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return k
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return k
		}
		end := stringEnd(b, i)
		if end < 0 {
			return k
		}
		key := string(b[i+1 : end-1])
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return k
		}
		i = skipSpace(b, i+1)
		vend := valueEnd(b, i)
		if vend < 0 {
			return k
		}
		switch v := b[i:vend]; key {
		case "id":
			if k.id != nil || !scalarID(v) {
				return headKeys{} // a second id, or none a request may carry: no answer
			}
			k.id = v
		case "method":
			k.method = v
		}
		i = skipSpace(b, vend)
		if i >= len(b) || b[i] != ',' {
			return k
		}
		i++
	}
}

// lastID reads an id that is the last member of the object b ends with:
// `"id":VALUE}` at its very end. The final '}' of a JSON object line
// closes the top-level object, so the member just before it is a top-level
// one.
func lastID(b []byte) []byte {
	j := skipSpaceBack(b, len(b))
	if j == 0 || b[j-1] != '}' {
		return nil
	}
	vend := skipSpaceBack(b, j-1)
	vstart := scalarStartBack(b, vend)
	if vstart < 0 || !scalarID(b[vstart:vend]) {
		return nil
	}
	c := skipSpaceBack(b, vstart)
	if c == 0 || b[c-1] != ':' {
		return nil
	}
	kend := skipSpaceBack(b, c-1)
	if kend < 4 || string(b[kend-4:kend]) != `"id"` || (kend >= 5 && b[kend-5] == '\\') {
		return nil
	}
	if p := skipSpaceBack(b, kend-4); p == 0 || (b[p-1] != ',' && b[p-1] != '{') {
		return nil
	}
	return b[vstart:vend]
}

// scalarID reports whether v is a JSON-RPC id a request may carry: a
// string or a number.
func scalarID(v []byte) bool {
	if len(v) == 0 || !json.Valid(v) {
		return false
	}
	return v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func skipSpaceBack(b []byte, j int) int {
	for j > 0 && isSpace(b[j-1]) {
		j--
	}
	return j
}

// stringEnd returns the index after the string starting at b[i] ('"'), or
// -1 when b ends first.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index after the JSON value starting at b[i], or -1
// when b ends first. It only frames the value; json.Valid judges the ones
// that are kept.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		if c := b[j]; c == ',' || c == '}' || c == ']' || isSpace(c) {
			return j
		}
	}
	return -1
}

// scalarStartBack returns where the string or number ending at b[:j]
// starts, or -1.
func scalarStartBack(b []byte, j int) int {
	if j == 0 {
		return -1
	}
	if b[j-1] != '"' {
		i := j
		for i > 0 && (b[i-1] == '-' || b[i-1] == '+' || b[i-1] == '.' || b[i-1] == 'e' || b[i-1] == 'E' || (b[i-1] >= '0' && b[i-1] <= '9')) {
			i--
		}
		if i == j {
			return -1
		}
		return i
	}
	// The opening quote is the nearest '"' before the closing one that is
	// not escaped (preceded by an even number of backslashes).
	for i := j - 2; i >= 0; i-- {
		if b[i] != '"' {
			continue
		}
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	return -1
}
