package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
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
	TaskID    string // params.taskId (tasks/get, tasks/update, tasks/cancel, tasks/result)

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
//
// Parse reads a message the way a JSON decoder on the other side would, or
// refuses it: a routed key duplicated, escaped or in another spelling is
// ErrAmbiguous (see there why refusing beats canonicalizing), and so is an
// id that is not a string, an integer or null, a method that is not a
// string, and a message that is both a request and a response. It walks
// params, params._meta and error in the same pass as it skips them.
func Parse(raw []byte, m *Message) error {
	if h := parseHook.Load(); h != nil { // tests only (ObserveParses)
		(*h)(raw)
	}
	*m = Message{Raw: raw}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		if i < len(raw) && raw[i] == '[' {
			return ErrNotMessage
		}
		return ErrSyntax
	}
	p := parser{m: m}
	end, err := walkObject(raw, i, 0, p.envelope)
	if err != nil {
		return err
	}
	if skipSpace(raw, end) != len(raw) {
		return ErrSyntax
	}
	// Some JSON-RPC libraries write the member they do not use as null
	// ("result":{...},"error":null); decoders read that as absent.
	if m.Error.Present() && isNull(raw[m.Error.Start:m.Error.End]) {
		m.Error = Span{}
	} else if m.Error.Present() && m.Result.Present() && isNull(raw[m.Result.Start:m.Result.End]) {
		m.Result = Span{}
	}
	hasMethod := p.seen[0]&(1<<envMethod) != 0
	switch {
	case hasMethod && m.Method == "":
		return errMethod
	case hasMethod && (m.Result.Present() || m.Error.Present()), m.Result.Present() && m.Error.Present():
		return errRequestAndResponse
	case m.ID.Present() && !validID(m.IDBytes()):
		return errID
	}
	switch {
	case hasMethod && m.ID.Present() && !isNull(raw[m.ID.Start:m.ID.End]):
		m.Kind = KindRequest
	case hasMethod:
		m.Kind = KindNotification
		m.ID = Span{}
	case m.Result.Present() || m.Error.Present():
		m.Kind = KindResponse
	default:
		return ErrNotMessage
	}
	if m.Method == "notifications/progress" {
		m.ProgressToken = p.paramsToken
	}
	if m.Kind == KindRequest && p.metaToken.Present() {
		m.ProgressToken = p.metaToken
	}
	return nil
}

var (
	errMethod             = fmt.Errorf("%w: method must be a non-empty string", ErrNotMessage)
	errRequestAndResponse = fmt.Errorf("%w: both a request and a response", ErrNotMessage)
	errID                 = fmt.Errorf("%w: id must be a string, an integer or null", ErrNotMessage)
)

// validID reports whether an id is a string, an integer or null: MCP's
// "RequestId = string | number" with the SDKs' integer-only numbers. A
// fraction or exponent is refused rather than compared byte for byte with
// what a peer that normalizes numbers (1.0 -> 1) answers.
func validID(b []byte) bool {
	switch {
	case b[0] == '"' || isNull(b):
		return true
	case b[0] == '-':
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parser holds what Parse learns while it walks a message.
type parser struct {
	m                      *Message
	seen                   [4]uint32 // keys met in the envelope, params, _meta, error
	paramsToken, metaToken Span
}

func (p *parser) envelope(key []byte, s int) (int, error) {
	raw := p.m.Raw
	k, err := envelopeKeys.lookup(key, &p.seen[0])
	if err != nil {
		return 0, err
	}
	var e int
	switch {
	case k == envParams && raw[s] == '{':
		e, err = walkObject(raw, s, 1, p.params)
	case k == envError && raw[s] == '{':
		e, err = walkObject(raw, s, 1, p.errorObject)
	default:
		e, err = skipValue(raw, s, 1)
	}
	if err != nil {
		return 0, err
	}
	sp := Span{s, e}
	switch k {
	case envID:
		p.m.ID = sp
	case envMethod:
		if raw[s] != '"' {
			return 0, errMethod
		}
		p.m.Method, err = stringValue(raw[s:e])
	case envParams:
		p.m.Params = sp
	case envResult:
		p.m.Result = sp
	case envError:
		p.m.Error = sp
	}
	return e, err
}

func (p *parser) params(key []byte, s int) (int, error) {
	raw := p.m.Raw
	k, err := paramsKeys.lookup(key, &p.seen[1])
	if err != nil {
		return 0, err
	}
	var e int
	if k == parMeta && raw[s] == '{' {
		e, err = walkObject(raw, s, 2, p.meta)
	} else {
		e, err = skipValue(raw, s, 2)
	}
	if err != nil {
		return 0, err
	}
	sp := Span{s, e}
	switch k {
	case parName:
		if raw[s] == '"' {
			p.m.Name, err = stringValue(raw[s:e])
		}
	case parURI:
		if raw[s] == '"' {
			p.m.URI, err = stringValue(raw[s:e])
		}
	case parArguments:
		p.m.Arguments = sp
	case parMeta:
		p.m.Meta = sp
	case parRequestID:
		p.m.RequestID = sp
	case parProgressToken:
		p.paramsToken = sp
	case parTaskID:
		if raw[s] == '"' {
			p.m.TaskID, err = stringValue(raw[s:e])
		}
	}
	return e, err
}

func (p *parser) meta(key []byte, s int) (int, error) {
	raw := p.m.Raw
	k, err := metaKeys.lookup(key, &p.seen[2])
	if err != nil {
		return 0, err
	}
	e, err := skipValue(raw, s, 3)
	if err != nil {
		return 0, err
	}
	switch k {
	case metaProgressToken:
		p.metaToken = Span{s, e}
	case metaProtocolVersion:
		if raw[s] == '"' {
			p.m.ProtocolVersion, err = stringValue(raw[s:e])
		}
	case metaClientCapabilities:
		p.m.HasClientCapabilities = true
	case metaLogLevel:
		if raw[s] == '"' {
			p.m.LogLevel, err = stringValue(raw[s:e])
		}
	case metaSubscriptionID:
		p.m.SubscriptionID = Span{s, e}
	}
	return e, err
}

func (p *parser) errorObject(key []byte, s int) (int, error) {
	raw := p.m.Raw
	k, err := errorKeys.lookup(key, &p.seen[3])
	if err != nil {
		return 0, err
	}
	e, err := skipValue(raw, s, 2)
	if err == nil && k == errCode {
		p.m.ErrorCode, _ = strconv.Atoi(string(raw[s:e]))
	}
	return e, err
}

func isNull(b []byte) bool { return string(b) == "null" }

// stringValue decodes a JSON string; other JSON values yield "". Invalid
// UTF-8 reads as U+FFFD, as encoding/json reads it: a method or tool name
// is the same string for the bridge and the peer.
func stringValue(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' {
		return "", nil
	}
	inner := b[1 : len(b)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", ErrSyntax
	}
	return s, nil
}

// Field returns the span of key inside the object at span obj, searching one
// level deep. ok is false if obj is not an object or has no such key, and
// also when the key is there more than once or in another spelling a
// decoder would take for it (escaped, another case): then no reading of it
// is the one the peer has, so none is given.
func Field(raw []byte, obj Span, key string) (Span, bool) {
	var h [1]keyHits
	ok := findKeys(raw, obj, []string{key}, h[:])
	return h[0].span, ok && h[0].one()
}

// Field2 is Field for two keys in one walk of obj: ok1 and ok2 say what
// Field would of k1 and k2.
func Field2(raw []byte, obj Span, k1, k2 string) (s1 Span, ok1 bool, s2 Span, ok2 bool) {
	var h [2]keyHits
	ok := findKeys(raw, obj, []string{k1, k2}, h[:])
	return h[0].span, ok && h[0].one(), h[1].span, ok && h[1].one()
}

// keyHits is what one walk of an object saw of one key: its last exact
// occurrence, how many there were, and whether another spelling a decoder
// takes for it was there too.
type keyHits struct {
	span    Span
	n       int
	variant bool
}

func (h *keyHits) one() bool { return h.n == 1 && !h.variant }

// findKeys walks the object at obj once, noting each of keys in hits; it
// reports whether obj is a well-formed object.
func findKeys(raw []byte, obj Span, keys []string, hits []keyHits) bool {
	if !obj.Present() || raw[obj.Start] != '{' {
		return false
	}
	_, err := objectFields(raw, obj.Start, func(k []byte, s, e int) error {
		for i, key := range keys {
			exact, v := keyMatch(k, key)
			if exact {
				hits[i].span, hits[i].n = Span{s, e}, hits[i].n+1
			}
			hits[i].variant = hits[i].variant || v
		}
		return nil
	})
	return err == nil
}

// StringValue decodes the string value at sp (ok false if it is not a
// string).
func StringValue(raw []byte, sp Span) (string, bool) {
	if !sp.Present() || raw[sp.Start] != '"' {
		return "", false
	}
	s, err := stringValue(raw[sp.Start:sp.End])
	return s, err == nil
}

// StringField is Field for a string value, decoded.
func StringField(raw []byte, obj Span, key string) (string, bool) {
	sp, ok := Field(raw, obj, key)
	if !ok {
		return "", false
	}
	return StringValue(raw, sp)
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
