package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// ErrNotMessage reports JSON that is not a single JSON-RPC message object
// (a batch array, a bare value, or an object with neither method nor
// result/error).
var ErrNotMessage = errors.New("wire: not a JSON-RPC message")

// A Span locates a JSON value inside Message.Raw: Raw[Start:End]. The zero
// Span means the field is absent.
type Span struct{ Start, End int }

// Present reports whether the field was in the message.
func (s Span) Present() bool { return s.End > s.Start }

// Kind classifies a message.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// MCP _meta keys the bridge reads.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// A Message is the envelope of one JSON-RPC message: where its fields sit in
// Raw, plus the few strings a bridge routes on. Parse fills it without
// copying Raw; the Message is valid as long as Raw is.
type Message struct {
	Raw  []byte
	Kind Kind

	ID     Span // the id value; in a response it may be null
	Method string
	Params Span
	Result Span
	Error  Span

	// From params.
	Name      string // params.name (tools/call, prompts/get)
	URI       string // params.uri (resources/read, resources/subscribe, ...)
	Arguments Span   // params.arguments (tools/call)
	Meta      Span   // params._meta
	RequestID Span   // params.requestId (notifications/cancelled)

	// ProgressToken is params._meta.progressToken in a request and
	// params.progressToken in notifications/progress.
	ProgressToken Span

	// From params._meta.
	ProtocolVersion       string // io.modelcontextprotocol/protocolVersion
	HasClientCapabilities bool   // io.modelcontextprotocol/clientCapabilities present
	LogLevel              string // io.modelcontextprotocol/logLevel
	SubscriptionID        Span   // io.modelcontextprotocol/subscriptionId

	// ErrorCode is error.code of an error response (0 if absent or not an
	// integer).
	ErrorCode int
}

// Bytes returns the raw bytes of a span.
func (m *Message) Bytes(s Span) []byte { return m.Raw[s.Start:s.End] }

// IDBytes returns the raw id, or nil when there is none.
func (m *Message) IDBytes() []byte {
	if !m.ID.Present() {
		return nil
	}
	return m.Raw[m.ID.Start:m.ID.End]
}

// IsModern reports whether the message carries the 2026-07-28 per-request
// envelope, which is how a dual-era peer tells the eras apart (2026-07-28
// versioning: a request is modern when params._meta names a protocol
// version).
func (m *Message) IsModern() bool { return m.ProtocolVersion != "" }

// Parse parses raw into m. raw must hold one JSON object; a leading '[' (a
// batch) yields ErrNotMessage. Parse does not copy raw.
func Parse(raw []byte, m *Message) error {
	*m = Message{Raw: raw}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		if i < len(raw) && raw[i] == '[' {
			return ErrNotMessage
		}
		return ErrSyntax
	}
	end, err := objectFields(raw, i, func(key []byte, s, e int) error {
		switch string(key) {
		case "id":
			m.ID = Span{s, e}
		case "method":
			v, err := stringValue(raw[s:e])
			if err != nil {
				return err
			}
			m.Method = v
		case "params":
			m.Params = Span{s, e}
		case "result":
			m.Result = Span{s, e}
		case "error":
			m.Error = Span{s, e}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if skipSpace(raw, end) != len(raw) {
		return ErrSyntax
	}
	switch {
	case m.Method != "" && m.ID.Present() && !isNull(raw[m.ID.Start:m.ID.End]):
		m.Kind = KindRequest
	case m.Method != "":
		m.Kind = KindNotification
		m.ID = Span{}
	case m.Result.Present() || m.Error.Present():
		m.Kind = KindResponse
	default:
		return ErrNotMessage
	}
	if m.Params.Present() && raw[m.Params.Start] == '{' {
		if err := m.parseParams(); err != nil {
			return err
		}
	}
	if m.Error.Present() && raw[m.Error.Start] == '{' {
		_, err := objectFields(raw, m.Error.Start, func(key []byte, s, e int) error {
			if string(key) == "code" {
				m.ErrorCode, _ = strconv.Atoi(string(raw[s:e]))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *Message) parseParams() error {
	raw := m.Raw
	_, err := objectFields(raw, m.Params.Start, func(key []byte, s, e int) error {
		var err error
		switch string(key) {
		case "name":
			if raw[s] == '"' {
				m.Name, err = stringValue(raw[s:e])
			}
		case "uri":
			if raw[s] == '"' {
				m.URI, err = stringValue(raw[s:e])
			}
		case "arguments":
			m.Arguments = Span{s, e}
		case "_meta":
			m.Meta = Span{s, e}
		case "requestId":
			m.RequestID = Span{s, e}
		case "progressToken":
			if m.Method == "notifications/progress" {
				m.ProgressToken = Span{s, e}
			}
		}
		return err
	})
	if err != nil || !m.Meta.Present() || raw[m.Meta.Start] != '{' {
		return err
	}
	_, err = objectFields(raw, m.Meta.Start, func(key []byte, s, e int) error {
		var err error
		switch string(key) {
		case "progressToken":
			if m.Kind == KindRequest {
				m.ProgressToken = Span{s, e}
			}
		case MetaProtocolVersion:
			if raw[s] == '"' {
				m.ProtocolVersion, err = stringValue(raw[s:e])
			}
		case MetaClientCapabilities:
			m.HasClientCapabilities = true
		case MetaLogLevel:
			if raw[s] == '"' {
				m.LogLevel, err = stringValue(raw[s:e])
			}
		case MetaSubscriptionID:
			m.SubscriptionID = Span{s, e}
		}
		return err
	})
	return err
}

func isNull(b []byte) bool { return string(b) == "null" }

// stringValue decodes a JSON string; other JSON values yield "".
func stringValue(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' {
		return "", nil
	}
	inner := b[1 : len(b)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", ErrSyntax
	}
	return s, nil
}

// Field returns the span of key inside the object at span obj, searching one
// level deep. ok is false if obj is not an object or has no such key.
func Field(raw []byte, obj Span, key string) (Span, bool) {
	if !obj.Present() || raw[obj.Start] != '{' {
		return Span{}, false
	}
	var found Span
	ok := false
	_, err := objectFields(raw, obj.Start, func(k []byte, s, e int) error {
		if !ok && string(k) == key {
			found, ok = Span{s, e}, true
		}
		return nil
	})
	return found, ok && err == nil
}

// StringField is Field for a string value, decoded.
func StringField(raw []byte, obj Span, key string) (string, bool) {
	sp, ok := Field(raw, obj, key)
	if !ok || raw[sp.Start] != '"' {
		return "", false
	}
	s, err := stringValue(raw[sp.Start:sp.End])
	return s, err == nil
}

// Elements returns the spans of the elements of the array at span arr.
func Elements(raw []byte, arr Span) ([]Span, error) {
	if !arr.Present() || raw[arr.Start] != '[' {
		return nil, ErrSyntax
	}
	var out []Span
	_, err := arrayElems(raw, arr.Start, func(s, e int) error {
		out = append(out, Span{s, e})
		return nil
	})
	return out, err
}

// ParseIntID returns the value of an integer id such as 42 (the form the
// bridge uses for ids it mints). ok is false for strings, fractions and
// anything out of range.
func ParseIntID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for i, c := range b {
		if c == '-' && i == 0 && len(b) > 1 {
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}
