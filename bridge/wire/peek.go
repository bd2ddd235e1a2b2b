package wire

import "bytes"

// A Peek is what the two ends of a message too large to hold say about its
// envelope (PeekEnvelope).
type Peek struct {
	// ID is the envelope's "id" as written (a string, an integer or null),
	// or nil when neither end holds it whole.
	ID []byte
	// Method: a "method" member was seen (a request or a notification).
	Method bool
	// Response: a "result" or an "error" member was seen, and no "method".
	Response bool
}

// PeekEnvelope reads the envelope members it can find in the first bytes
// (head) and the last bytes (tail) of one JSON-RPC message that was not
// kept whole, such as a line over a size limit (lineio.TooLongError): a
// message that cannot be relayed can still be answered, if its id is
// readable.
//
// Where the id is: the SDKs write it first or last. The Go and Python SDKs
// and encoding/json write jsonrpc, id, then result or error, so the head
// holds it; the TypeScript SDK writes result (or error), then jsonrpc and
// id, so it is the tail's last member. PeekEnvelope walks the head's
// members forward until one is cut off, and the tail's members backward
// from the closing brace while their values are strings, numbers or
// literals (an object or array cannot be walked backward safely: its start
// may be cut off). A member whose key was read counts as seen even when
// its value is cut off, which is how "result" is known to open a huge
// answer.
//
// It never guesses: an id that is not read whole, ends that name two
// different ids, a routed key spelled ambiguously (see ErrAmbiguous), both
// a method and a result, or an id that Parse would refuse all give the
// zero Peek. A message whose id sits between huge members at neither end
// has no readable id either; the caller must then leave its request to
// its own deadline rather than fail another one.
func PeekEnvelope(head, tail []byte) Peek {
	var hs, ts uint32
	var hid, tid []byte
	if peekHead(head, &hs, &hid) != nil || peekTail(tail, &ts, &tid) != nil {
		return Peek{}
	}
	id := hid
	if id == nil {
		id = tid
	} else if tid != nil && !bytes.Equal(hid, tid) {
		return Peek{}
	}
	if id != nil && !validID(id) {
		return Peek{}
	}
	seen := hs | ts
	p := Peek{ID: id, Method: seen&(1<<envMethod) != 0, Response: seen&(1<<envResult|1<<envError) != 0}
	if p.Method && p.Response {
		return Peek{}
	}
	return p
}

// peekHead walks the members at the start of b forward until one is cut
// off. It returns an error only for what makes the message ambiguous.
func peekHead(b []byte, seen *uint32, id *[]byte) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil // cut off, the end of the object, or not JSON
		}
		kend, err := skipString(b, i)
		if err != nil {
			return nil
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		k, err := envelopeKeys.lookup(key, seen)
		if err != nil {
			return err
		}
		vstart := skipSpace(b, i+1)
		vend, err := skipValue(b, vstart, 1)
		if err != nil {
			return nil // cut off inside the value
		}
		// A number is whole only if something follows it.
		if i = skipSpace(b, vend); i >= len(b) || (b[i] != ',' && b[i] != '}') {
			return nil
		}
		if k == envID {
			*id = b[vstart:vend]
		}
		if b[i] == '}' {
			return nil
		}
		i++
	}
}

// peekTail walks the members at the end of b backward from the closing
// brace while their values are scalars. The closing brace of a whole
// message is the envelope's, so the member before it is an envelope
// member, and so is each scalar member before that.
func peekTail(b []byte, seen *uint32, id *[]byte) error {
	i := spaceBack(b, len(b))
	if i == 0 || b[i-1] != '}' {
		return nil
	}
	i--
	for {
		vend := spaceBack(b, i)
		if vend == 0 {
			return nil
		}
		var vstart int
		switch c := b[vend-1]; c {
		case '"':
			s, ok := stringStart(b, vend-1)
			if !ok {
				return nil
			}
			vstart = s
		case '}', ']', '{', '[', ',', ':':
			return nil // not a scalar (or the empty object): stop here
		default:
			s := vend - 1
			for s >= 0 && !delimiter(b[s]) {
				s--
			}
			if s < 0 {
				return nil // it may go on before the tail
			}
			vstart = s + 1
		}
		k := spaceBack(b, vstart)
		if k == 0 || b[k-1] != ':' {
			return nil
		}
		k = spaceBack(b, k-1)
		if k == 0 || b[k-1] != '"' {
			return nil
		}
		ks, ok := stringStart(b, k-1)
		if !ok {
			return nil
		}
		idx, err := envelopeKeys.lookup(b[ks+1:k-1], seen)
		if err != nil {
			return err
		}
		if idx == envID {
			*id = b[vstart:vend]
		}
		i = spaceBack(b, ks)
		if i == 0 || b[i-1] != ',' {
			return nil // the opening brace: the whole object was walked
		}
		i--
	}
}

// spaceBack returns the index just past the last non-space byte of b[:i].
func spaceBack(b []byte, i int) int {
	for i > 0 && isSpace(b[i-1]) {
		i--
	}
	return i
}

// stringStart returns the index of the opening quote of the string whose
// closing quote is b[q]. Inside a JSON string every quote is escaped, so
// the first quote before q preceded by an even number of backslashes opens
// it; when that run of backslashes reaches the start of b, what came
// before it is unknown and so is the answer.
func stringStart(b []byte, q int) (int, bool) {
	for p := bytes.LastIndexByte(b[:q], '"'); p >= 0; p = bytes.LastIndexByte(b[:p], '"') {
		n := 0
		for p-n-1 >= 0 && b[p-n-1] == '\\' {
			n++
		}
		if p-n == 0 {
			return 0, false
		}
		if n%2 == 0 {
			return p, true
		}
	}
	return 0, false
}

// delimiter reports whether c ends a number or literal.
func delimiter(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return isSpace(c)
}
