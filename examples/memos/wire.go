package main

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Protocol constants shared by both eras.
const (
	modernVersion = "2026-07-28"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaProgressToken      = "progressToken"

	serverName         = "memos-example-adapter"
	serverVersion      = "1.0.0"
	serverInstructions = "Provides tools for querying Memos."

	cacheTTLMs = 300000
	cacheScope = "private"
)

// legacyVersions are the handshake-era revisions this server negotiates.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// JSON-RPC and MCP error codes.
const (
	codeParseError            = -32700
	codeInvalidRequest        = -32600
	codeMethodNotFound        = -32601
	codeInvalidParams         = -32602
	codeInternalError         = -32603
	codeMissingCapability     = -32021
	codeUnsupportedProtocolVn = -32022
)

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

var serverInfo = implementation{Name: serverName, Version: serverVersion}

// resultMeta is the `_meta` object of a modern result. Field order is wire order.
type resultMeta struct {
	SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId,omitempty"`
	ServerInfo     *implementation `json:"io.modelcontextprotocol/serverInfo,omitempty"`
}

func modernMeta() *resultMeta { return &resultMeta{ServerInfo: &serverInfo} }

// notificationMeta is the `_meta` of a notification delivered on a listen stream.
type notificationMeta struct {
	SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
}

// inMessage is any inbound JSON-RPC message (request, notification or response).
type inMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

func newError(code int, msg string) *rpcError { return &rpcError{Code: code, Message: msg} }

type outResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type outNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type outRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  any             `json:"params,omitempty"`
}

type unsupportedVersionData struct {
	Supported []string        `json:"supported"`
	Requested json.RawMessage `json:"requested"`
}

func unsupportedVersion(requested json.RawMessage) *rpcError {
	return &rpcError{
		Code:    codeUnsupportedProtocolVn,
		Message: "Unsupported protocol version",
		Data:    unsupportedVersionData{Supported: []string{modernVersion}, Requested: requested},
	}
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int             `json:"progress"`
	Total         int             `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

type logParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Data   string `json:"data"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// callToolResult serves both eras: legacy results leave ResultType and Meta empty.
type callToolResult struct {
	ResultType        string          `json:"resultType,omitempty"`
	Content           []contentBlock  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              *resultMeta     `json:"_meta,omitempty"`
}

type toolsListResult struct {
	ResultType string            `json:"resultType,omitempty"`
	Tools      []json.RawMessage `json:"tools"`
	TTLMs      int               `json:"ttlMs,omitempty"`
	CacheScope string            `json:"cacheScope,omitempty"`
	Meta       *resultMeta       `json:"_meta,omitempty"`
}

type toolsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

type discoverResult struct {
	ResultType        string   `json:"resultType"`
	SupportedVersions []string `json:"supportedVersions"`
	Capabilities      struct {
		Tools toolsCapability `json:"tools"`
	} `json:"capabilities"`
	Instructions string      `json:"instructions"`
	TTLMs        int         `json:"ttlMs"`
	CacheScope   string      `json:"cacheScope"`
	Meta         *resultMeta `json:"_meta"`
}

type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Logging struct{}        `json:"logging"`
		Tools   toolsCapability `json:"tools"`
	} `json:"capabilities"`
	ServerInfo   implementation `json:"serverInfo"`
	Instructions string         `json:"instructions"`
}

type completeResult struct {
	ResultType string      `json:"resultType"`
	Meta       *resultMeta `json:"_meta"`
}

// Elicitation (legacy server->client request, modern MRTR input request).
const confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm deletion"}},"required":["confirm"]}`

type elicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type inputRequest struct {
	Method string       `json:"method"`
	Params elicitParams `json:"params"`
}

type confirmInputRequests struct {
	Confirm inputRequest `json:"confirm"`
}

type inputRequiredResult struct {
	ResultType    string                `json:"resultType"`
	InputRequests *confirmInputRequests `json:"inputRequests,omitempty"`
	RequestState  string                `json:"requestState,omitempty"`
	Meta          *resultMeta           `json:"_meta"`
}

type elicitResult struct {
	Action  string `json:"action"`
	Content struct {
		Confirm bool `json:"confirm"`
	} `json:"content"`
}

// encodeLine marshals v without HTML escaping and returns it with one trailing '\n'.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeCompact marshals v without HTML escaping and without a trailing newline.
func encodeCompact(v any) ([]byte, error) {
	b, err := encodeLine(v)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b, []byte("\n")), nil
}

// isNull reports whether a raw JSON value is absent or the literal null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// idKey canonicalises a request id so that cancellations match the id they name.
func idKey(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// validID reports whether raw is a string or a number (JSON-RPC id forms).
func validID(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// parseObject decodes params into a map, treating absent/null as an empty object.
func parseObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	if isNull(raw) {
		return m, true
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	if err := json.Unmarshal(t, &m); err != nil {
		return nil, false
	}
	return m, true
}

// metaOf extracts params._meta as a map (nil when absent or malformed).
func metaOf(params map[string]json.RawMessage) map[string]json.RawMessage {
	raw, ok := params["_meta"]
	if !ok {
		return nil
	}
	m, ok := parseObject(raw)
	if !ok {
		return nil
	}
	return m
}

var logLevels = map[string]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3,
	"error": 4, "critical": 5, "alert": 6, "emergency": 7,
}
