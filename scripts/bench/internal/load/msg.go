//go:build linux

package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// span is a [start,end) range of a message; end==0 means absent.
type span struct{ start, end int }

func (s span) ok() bool { return s.end > 0 }

// top holds the spans of a JSON-RPC message's top-level members. Scanning
// them skips the bytes of long strings with bytes.IndexByte, so a 16 MiB
// result costs the load generator little.
type top struct {
	id, result, err, method, params span
}

var errSyntax = errors.New("malformed JSON message")

func scanTop(b []byte) (t top, err error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return t, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return t, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return t, errSyntax
		}
		kEnd, err := skipString(b, i)
		if err != nil {
			return t, err
		}
		key := b[i+1 : kEnd-1]
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return t, errSyntax
		}
		i = skipWS(b, i+1)
		vEnd, err := skipValue(b, i)
		if err != nil {
			return t, err
		}
		v := span{i, vEnd}
		switch string(key) {
		case "id":
			t.id = v
		case "result":
			t.result = v
		case "error":
			t.err = v
		case "method":
			t.method = v
		case "params":
			t.params = v
		}
		i = skipWS(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return t, nil
		}
		return t, errSyntax
	}
	return t, errSyntax
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errSyntax
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				e, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}

func (t top) get(b []byte, s span) []byte {
	if !s.ok() {
		return nil
	}
	return b[s.start:s.end]
}

// methodIs compares the method member with m (a plain string, no escapes).
func (t top) methodIs(b []byte, m string) bool {
	v := t.get(b, t.method)
	return len(v) == len(m)+2 && string(v[1:len(v)-1]) == m
}

// rpcError turns an error member into a Go error.
func rpcError(raw []byte) error {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return fmt.Errorf("JSON-RPC error %.200s", raw)
	}
	return fmt.Errorf("JSON-RPC error %d: %.200s", e.Code, e.Message)
}

// progressToken returns the integer progress token of a progress
// notification's params, or -1.
func progressToken(params []byte) int64 {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Token) == 0 {
		return -1
	}
	tok := p.Token
	if tok[0] == '"' {
		s, err := strconv.Unquote(string(tok))
		if err != nil {
			return -1
		}
		tok = []byte(s)
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// idInt parses a numeric (or numeric string) id.
func idInt(raw []byte) (int64, bool) {
	if len(raw) > 1 && raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// Spec is one tools/call of the echo tool.
type Spec struct {
	Size     int    // bytes of result text
	Progress int    // progress notifications before the result (needs a token)
	DelayMs  int    // pause before each progress notification
	Tool     string // the tool called; "" is echo (an aggregate names it <server>_echo)
}

const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-bridge-loadgen","version":"1.0.0"}`

// appendCall appends a tools/call request with id to dst.
func appendCall(dst []byte, id int64, s Spec, modern bool) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	tool := s.Tool
	if tool == "" {
		tool = "echo"
	}
	dst = append(dst, `,"method":"tools/call","params":{"name":"`...)
	dst = append(dst, tool...)
	dst = append(dst, `","arguments":{"size":`...)
	dst = strconv.AppendInt(dst, int64(s.Size), 10)
	if s.Progress > 0 {
		dst = append(dst, `,"progress":`...)
		dst = strconv.AppendInt(dst, int64(s.Progress), 10)
		dst = append(dst, `,"delayMs":`...)
		dst = strconv.AppendInt(dst, int64(s.DelayMs), 10)
	}
	dst = append(dst, '}')
	if modern || s.Progress > 0 {
		dst = append(dst, `,"_meta":{`...)
		if s.Progress > 0 {
			dst = append(dst, `"progressToken":`...)
			dst = strconv.AppendInt(dst, id, 10)
			if modern {
				dst = append(dst, ',')
			}
		}
		if modern {
			dst = append(dst, modernMeta...)
		}
		dst = append(dst, '}')
	}
	return append(dst, `}}`...)
}

// initializeRequest is the 2025 handshake the legacy modes send.
func initializeRequest(id int64) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) +
		`,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bridge-loadgen","version":"1.0.0"}}}`)
}

const initializedNotification = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
