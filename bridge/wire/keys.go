package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrAmbiguous reports a message that a JSON decoder could read differently
// from Parse: a key the bridge routes on appears twice, is written with
// escapes, or is spelled so that some decoder takes it for a routed key
// (Go's encoding/json matches keys case-insensitively, with Unicode
// folding).
//
// One reading of every message. The bridge reads keys byte for byte; the
// peers on either side decode JSON: escapes decoded, the last of duplicate
// keys wins, and Go also matches "ID" or "\u0069d" for "id". A message the
// two read differently is a message the bridge routes by one id and the
// child answers by another — so a client could have another client's
// answer, progress or cancellation. There are two ways to a single reading:
// rewrite such keys into one canonical spelling, or refuse them. Parse
// refuses them, for three reasons:
//   - There is no canonical spelling for a case variant: Go peers take "ID"
//     for "id", TypeScript and Python peers do not, so any rewrite is wrong
//     for some peer.
//   - No MCP SDK writes a routed key with an escape, twice or in another
//     case; only a hostile or broken peer does, and it should hear so.
//   - It costs nothing on the hot path. The check runs only on the members
//     of the few objects Parse walks anyway (the envelope, params,
//     params._meta, error), a plain ASCII key costs a length compare per
//     routed key of its length, and only keys with a backslash or a
//     non-ASCII byte are decoded. Canonicalizing would copy the message
//     (a 16 MiB result included) whenever it changed anything.
//
// Measured (BenchmarkParseRequest, BenchmarkParseLargeResult; Parse now
// also walks params and _meta in the pass that skips them): a request peek
// stays at 3 allocations and a 1 MiB result at 0; times were within the
// noise of a loaded 2-core machine (best of 15: 428 -> 498 ns and 560 ->
// 475 ns per request, 44 -> 54 us and 67 -> 32 us per result). Only a
// routed-level key with a backslash or a non-ASCII byte allocates, to
// decode it (BenchmarkParseEscapedKey).
var ErrAmbiguous = errors.New("wire: ambiguous message (a routed key is duplicated, escaped or in another spelling)")

// A keySet lists the keys the bridge reads in one object of a message. Its
// keys are ASCII, and no two are variants of each other.
type keySet []string

// Routed keys, per object Parse walks. Callers read more of params through
// Field; those keys are listed here too so that Parse has refused a
// message in which they are ambiguous before anyone reads them.
var (
	envelopeKeys = keySet{"jsonrpc", "id", "method", "params", "result", "error"}
	paramsKeys   = keySet{"name", "uri", "arguments", "_meta", "requestId", "progressToken", "taskId", "cursor",
		"level", "requestState", "inputResponses", "protocolVersion", "capabilities", "clientInfo"}
	metaKeys = keySet{"progressToken", MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo,
		MetaLogLevel, MetaSubscriptionID, MetaServerInfo}
	errorKeys = keySet{"code", "message", "data"}
)

// Indexes into the key sets above.
const (
	envJSONRPC = iota
	envID
	envMethod
	envParams
	envResult
	envError
)

const (
	parName = iota
	parURI
	parArguments
	parMeta
	parRequestID
	parProgressToken
	parTaskID
)

const (
	metaProgressToken = iota
	metaProtocolVersion
	metaClientCapabilities
	metaClientInfo
	metaLogLevel
	metaSubscriptionID
)

const errCode = 0

// lookup returns the index of the routed key that raw (a key as it stands
// between its quotes) spells exactly, or -1 for a key the bridge does not
// read. seen records the keys met so far in this object; a second one, or
// a key some decoder would take for a routed one but which is not spelled
// exactly like it, is ErrAmbiguous.
func (ks keySet) lookup(raw []byte, seen *uint32) (int, error) {
	if plainKey(raw) {
		for i, k := range ks {
			if len(k) != len(raw) {
				continue
			}
			if string(raw) == k {
				if *seen&(1<<i) != 0 {
					return -1, ambiguous(raw, "twice")
				}
				*seen |= 1 << i
				return i, nil
			}
			if asciiEqualFold(raw, k) {
				return -1, ambiguous(raw, "for "+k)
			}
		}
		return -1, nil
	}
	dec, err := decodeKey(raw)
	if err != nil {
		return -1, err
	}
	for _, k := range ks {
		if sameKey(dec, k) {
			return -1, ambiguous(raw, "for "+k)
		}
	}
	return -1, nil
}

// ambiguous wraps ErrAmbiguous with the key, for logs and error messages.
func ambiguous(raw []byte, what string) error {
	if len(raw) > 64 {
		raw = raw[:64]
	}
	return fmt.Errorf("%w: key %q %s", ErrAmbiguous, raw, what)
}

// keyMatch reports whether raw is key exactly (exact) and whether it is a
// spelling some decoder would take for key without being it (variant).
func keyMatch(raw []byte, key string) (exact, variant bool) {
	if plainKey(raw) {
		if string(raw) == key {
			return true, false
		}
		return false, len(raw) == len(key) && asciiEqualFold(raw, key)
	}
	dec, err := decodeKey(raw)
	return false, err != nil || sameKey(dec, key)
}

// plainKey reports whether a raw key is printable ASCII without escapes,
// the only form in which Parse's byte comparison and a decoder agree.
func plainKey(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// decodeKey decodes a raw key as encoding/json does (invalid UTF-8 becomes
// U+FFFD). This is the rare path: keys with escapes or non-ASCII bytes.
func decodeKey(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", ErrSyntax
	}
	return s, nil
}

// sameKey reports whether some JSON decoder could take the decoded key dec
// for key (compared as ASCII: every routed key is): equal when compared case-insensitively with every
// non-ASCII letter whose case mapping is ASCII replaced by it (encoding/json
// folds "ſ" to "s" and the Kelvin sign to "k"; unicode.ToLower maps "İ" to
// "i"), and also when only the part before a NUL is compared (decoders
// built on C strings stop there).
func sameKey(dec, key string) bool {
	n := 0
	for _, r := range dec {
		if r == 0 {
			return n == len(key)
		}
		if n >= len(key) {
			return false
		}
		if !sameLetter(r, key[n]) {
			return false
		}
		n++
	}
	return n == len(key)
}

// sameLetter reports whether rune r could be read as the ASCII byte c.
func sameLetter(r rune, c byte) bool {
	if r >= utf8.RuneSelf {
		switch {
		case unicode.ToLower(r) < utf8.RuneSelf:
			r = unicode.ToLower(r)
		case unicode.ToUpper(r) < utf8.RuneSelf:
			r = unicode.ToUpper(r)
		default:
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f < utf8.RuneSelf {
					return upper(byte(f)) == upper(c)
				}
			}
			return false
		}
	}
	return upper(byte(r)) == upper(c)
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func asciiEqualFold(a []byte, b string) bool {
	for i := range a {
		if upper(a[i]) != upper(b[i]) {
			return false
		}
	}
	return true
}

// Refusal is the message of the Invalid Request error (-32600) that
// answers input Parse refused with err: it names the rule the message
// broke, and for an ambiguous one the key.
func Refusal(err error) string {
	if errors.Is(err, ErrSyntax) {
		return "Invalid Request: not a JSON-RPC message"
	}
	return "Invalid Request: " + strings.TrimPrefix(err.Error(), "wire: ")
}
