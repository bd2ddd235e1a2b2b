package wire

import (
	"encoding/base64"
	"errors"
	"strings"
)

// HTTP headers of the 2026-07-28 Streamable HTTP transport
// (streamable-http §Request metadata).
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
	HeaderSessionID       = "Mcp-Session-Id"
)

// MediaType returns a media type without parameters or spaces; it does not
// allocate (mime.ParseMediaType did, three times per request).
func MediaType(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.TrimSpace(v)
}

const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// ErrHeaderValue reports a header value that is neither plain visible ASCII
// nor a well-formed Base64 sentinel.
var ErrHeaderValue = errors.New("wire: invalid header value")

// NameSource returns which body field a method mirrors into Mcp-Name
// ("name", "uri" or "taskId"), or "" when the method carries no Mcp-Name
// (streamable-http §Standard request headers). The tasks methods are the
// Tasks extension's (SEP-2663 §Streamable HTTP: Routing Headers): "When
// tasks/get, tasks/update, or tasks/cancel is sent over the Streamable
// HTTP transport, the client MUST set the Mcp-Name header ... to the value
// of params.taskId", so that load balancers can route a task's requests to
// the instance holding it.
func NameSource(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// NameValue returns the body value mirrored into Mcp-Name, and whether the
// method requires the header at all.
func (m *Message) NameValue() (string, bool) {
	switch NameSource(m.Method) {
	case "name":
		return m.Name, true
	case "uri":
		return m.URI, true
	case "taskId":
		return m.TaskID, true
	}
	return "", false
}

// plainSafe reports whether s can travel as a header value unencoded:
// printable ASCII, no leading or trailing space, and not shaped like the
// sentinel (streamable-http §Value encoding: clients "MUST also
// Base64-encode any plain-ASCII value that matches the sentinel pattern").
func plainSafe(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return !(strings.HasPrefix(s, sentinelPrefix) && strings.HasSuffix(s, sentinelSuffix))
}

// EncodeHeaderValue returns s as an Mcp-Name or Mcp-Param-* header value:
// unchanged when it is plain visible ASCII, otherwise in the
// "=?base64?…?=" form over its UTF-8 bytes.
func EncodeHeaderValue(s string) string {
	if plainSafe(s) {
		return s
	}
	return sentinelPrefix + base64.StdEncoding.EncodeToString([]byte(s)) + sentinelSuffix
}

// DecodeHeaderValue undoes EncodeHeaderValue on a received value. Optional
// whitespace around the value is not part of it (RFC 9110 §5.5). A value
// with characters outside visible ASCII, or a sentinel with bad Base64,
// yields ErrHeaderValue: servers "MUST reject requests with a recognized
// Mcp-Param-{Name} header that contains invalid characters".
func DecodeHeaderValue(v string) (string, error) {
	v = strings.Trim(v, " \t")
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", ErrHeaderValue
		}
	}
	if strings.HasPrefix(v, sentinelPrefix) && strings.HasSuffix(v, sentinelSuffix) && len(v) >= len(sentinelPrefix)+len(sentinelSuffix) {
		b, err := base64.StdEncoding.DecodeString(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
		if err != nil {
			return "", ErrHeaderValue
		}
		return string(b), nil
	}
	return v, nil
}
