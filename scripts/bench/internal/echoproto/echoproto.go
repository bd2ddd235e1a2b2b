// Package echoproto is the MCP semantics shared by the benchmark's echo
// servers (scripts/bench/echo over stdio, scripts/bench/httpecho over
// Streamable HTTP): server/discover (2026-07-28), initialize (2025 era),
// ping, tools/list, and tools/call of the tool "echo", which returns `size`
// bytes of text after `progress` progress notifications spaced `delayMs`
// apart (only when the request carries _meta.progressToken).
//
// Responses are built by appending into byte slices; the text of small
// results is cached per size, so the steady state allocates little.
package echoproto

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// ModernVersion is the stateless protocol revision.
const ModernVersion = "2026-07-28"

// legacyVersions are the handshake versions the echo servers accept; any
// other requested version is answered with the newest.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Request is the part of a JSON-RPC message the echo servers look at.
type Request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string `json:"name"`
		ProtocolVersion string `json:"protocolVersion"` // initialize
		Arguments       struct {
			Size     int `json:"size"`
			Progress int `json:"progress"`
			DelayMs  int `json:"delayMs"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken   json.RawMessage `json:"progressToken"`
			ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

// Reset clears r for reuse.
func (r *Request) Reset() { *r = Request{ID: r.ID[:0], Method: ""} }

// Parse decodes one message into r (which it resets first).
func (r *Request) Parse(msg []byte) error {
	r.Reset()
	return json.Unmarshal(msg, r)
}

// IsRequest reports whether the message has an id and a method.
func (r *Request) IsRequest() bool { return len(r.ID) > 0 && r.Method != "" && string(r.ID) != "null" }

// Modern reports whether the request carries the 2026-07-28 envelope.
func (r *Request) Modern() bool { return r.Params.Meta.ProtocolVersion != "" }

// WantsProgress reports whether a tools/call should send progress first.
func (r *Request) WantsProgress() bool {
	return r.Method == "tools/call" && len(r.Params.Meta.ProgressToken) > 0 && r.Params.Arguments.Progress > 0
}

// Delay is the pause before each progress notification.
func (r *Request) Delay() time.Duration {
	return time.Duration(r.Params.Arguments.DelayMs) * time.Millisecond
}

// Progress appends the i-th progress notification (1-based) to dst.
func (r *Request) Progress(dst []byte, i int) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	dst = append(dst, r.Params.Meta.ProgressToken...)
	dst = append(dst, `,"progress":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(r.Params.Arguments.Progress), 10)
	return append(dst, `}}`...)
}

// ServerName is reported in initialize and server/discover.
var ServerName = "bench-echo"

// Answer appends the response to a request to dst. For notifications and
// responses it returns dst unchanged and ok=false.
func (r *Request) Answer(dst []byte) (out []byte, ok bool) {
	if !r.IsRequest() {
		return dst, false
	}
	modern := r.Modern()
	switch r.Method {
	case "tools/call":
		if r.Params.Name != "echo" {
			return r.errorResponse(dst, -32602, "unknown tool "+strconv.Quote(r.Params.Name)), true
		}
		return r.echoResult(dst, r.Params.Arguments.Size, modern), true
	case "server/discover":
		dst = r.head(dst)
		dst = append(dst, `"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"`...)
		dst = append(dst, ServerName...)
		return append(dst, `","version":"1.0.0"}}}}`...), true
	case "initialize":
		v := legacyVersions[0]
		for _, l := range legacyVersions {
			if l == r.Params.ProtocolVersion {
				v = l
			}
		}
		dst = r.head(dst)
		dst = append(dst, `"result":{"protocolVersion":"`...)
		dst = append(dst, v...)
		dst = append(dst, `","capabilities":{"tools":{}},"serverInfo":{"name":"`...)
		dst = append(dst, ServerName...)
		return append(dst, `","version":"1.0.0"}}}`...), true
	case "ping":
		return append(r.head(dst), `"result":{}}`...), true
	case "tools/list":
		dst = r.head(dst)
		dst = append(dst, `"result":{`...)
		if modern {
			dst = append(dst, `"resultType":"complete","ttlMs":0,"cacheScope":"public",`...)
		}
		return append(dst, `"tools":[{"name":"echo","description":"Returns size bytes of text, after progress notifications delayMs apart when a progressToken is given.","inputSchema":{"type":"object","properties":{"size":{"type":"integer","minimum":0},"progress":{"type":"integer","minimum":0},"delayMs":{"type":"integer","minimum":0}}}}]}}`...), true
	default:
		return r.errorResponse(dst, -32601, "method not found: "+r.Method), true
	}
}

func (r *Request) head(dst []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, r.ID...)
	return append(dst, ',')
}

func (r *Request) errorResponse(dst []byte, code int, msg string) []byte {
	dst = r.head(dst)
	dst = append(dst, `"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = strconv.AppendQuote(dst, msg)
	return append(dst, `}}`...)
}

// cacheBudget bounds the bytes of result text kept across sizes.
const cacheBudget = 80 << 20

var (
	tails     sync.Map // tailKey -> []byte
	tailMu    sync.Mutex
	tailBytes int
)

type tailKey struct {
	size   int
	modern bool
}

// EchoParts returns the response to an echo tools/call as two pieces to
// be written one after the other: the head (appended to dst) and the
// result, which is shared and must not be modified. Results are cached per
// size (up to a budget), so a large one is built, and its memory touched,
// once.
func (r *Request) EchoParts(dst []byte) (head, tail []byte) {
	size := max(r.Params.Arguments.Size, 0)
	return r.head(dst), Tail(size, r.Modern())
}

// Tail returns the result member and closing braces of an echo response.
func Tail(size int, modern bool) []byte {
	k := tailKey{size, modern}
	if t, ok := tails.Load(k); ok {
		return t.([]byte)
	}
	t := appendTail(make([]byte, 0, size+96), size, modern)
	tailMu.Lock()
	defer tailMu.Unlock()
	if tailBytes+len(t) <= cacheBudget {
		if old, loaded := tails.LoadOrStore(k, t); loaded {
			return old.([]byte)
		}
		tailBytes += len(t)
	}
	return t
}

func (r *Request) echoResult(dst []byte, size int, modern bool) []byte {
	return append(r.head(dst), Tail(max(size, 0), modern)...)
}

// IsEcho reports whether the request is a tools/call of the echo tool.
func (r *Request) IsEcho() bool {
	return r.IsRequest() && r.Method == "tools/call" && r.Params.Name == "echo"
}

func appendTail(dst []byte, size int, modern bool) []byte {
	dst = append(dst, `"result":{`...)
	if modern {
		dst = append(dst, `"resultType":"complete",`...)
	}
	dst = append(dst, `"content":[{"type":"text","text":"`...)
	n := len(dst)
	dst = dst[:n+size]
	fill(dst[n:])
	return append(dst, `"}]}}`...)
}

// fill writes a repeating lowercase pattern (valid JSON string content).
func fill(b []byte) {
	const pat = "abcdefghijklmnopqrstuvwxyz0123456789"
	if len(b) == 0 {
		return
	}
	n := copy(b, pat)
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}
