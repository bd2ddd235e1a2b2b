package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// seed_tools.json holds the two tool definitions copied verbatim from the
// origin article (memo_list_memos and auth_get_current_user); they are emitted
// compacted, which keeps key order and string escapes byte-for-byte.
//
//go:embed seed_tools.json
var seedToolsJSON []byte

var seedTools = mustCompactArray(seedToolsJSON)

func mustCompactArray(data []byte) []json.RawMessage {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil {
		panic(fmt.Sprintf("seed_tools.json: %v", err))
	}
	for i, raw := range arr {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			panic(fmt.Sprintf("seed_tools.json[%d]: %v", i, err))
		}
		arr[i] = buf.Bytes()
	}
	return arr
}

type toolAnnotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

type toolSpec struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations toolAnnotations `json:"annotations"`
}

func mustDef(t toolSpec) json.RawMessage {
	t.Annotations.Title = t.Title
	b, err := encodeCompact(t)
	if err != nil {
		panic(err)
	}
	return b
}

const emptySchema = `{"type":"object","properties":{},"additionalProperties":false}`

var (
	defExport = mustDef(toolSpec{
		Name:        "memo_export_memos",
		Title:       "Memo Export Memos",
		Description: "ExportMemos exports all memos in several steps, reporting progress after each step. Long-running; supports progress notifications and cancellation.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer","description":"Number of progress steps (default 5)."}},"additionalProperties":false}`),
		Annotations: toolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	})
	defDelete = mustDef(toolSpec{
		Name:        "memo_delete_memo",
		Title:       "Memo Delete Memo",
		Description: "DeleteMemo deletes a memo after asking the user for confirmation (elicitation).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The resource name of the memo to delete.\n Format: memos/{memo}."}},"required":["name"],"additionalProperties":false}`),
		Annotations: toolAnnotations{DestructiveHint: true},
	})
	defStats = mustDef(toolSpec{
		Name:        "memo_debug_stats",
		Title:       "Memo Debug Stats",
		Description: "Reports server counters: cancellations that matched an in-flight request, other requests currently in flight, and requests handled so far.",
		InputSchema: json.RawMessage(emptySchema),
		Annotations: toolAnnotations{ReadOnlyHint: true},
	})
	defToggle = mustDef(toolSpec{
		Name:        "memo_toggle_beta",
		Title:       "Memo Toggle Beta",
		Description: "Adds or removes the memo_beta_echo tool, changing the tool list.",
		InputSchema: json.RawMessage(emptySchema),
	})
	defEcho = mustDef(toolSpec{
		Name:        "memo_beta_echo",
		Title:       "Memo Beta Echo",
		Description: "Echoes its text argument (beta tool, present only after memo_toggle_beta).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"Text to echo."}},"required":["text"],"additionalProperties":false}`),
		Annotations: toolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	})
)

type toolFunc func(env *callEnv, args argSet) (*toolOutcome, *rpcError)

// toolOutcome is a tool's result before era-specific wrapping. A nil outcome
// with a nil error means the request was cancelled and gets no response.
type toolOutcome struct {
	text          string
	structured    json.RawMessage
	isError       bool
	inputRequired *inputRequiredResult
}

func toolError(format string, a ...any) (*toolOutcome, *rpcError) {
	return &toolOutcome{text: fmt.Sprintf(format, a...), isError: true}, nil
}

func textResult(text string) (*toolOutcome, *rpcError) {
	return &toolOutcome{text: text}, nil
}

func structuredResult(v any) (*toolOutcome, *rpcError) {
	b, err := encodeCompact(v)
	if err != nil {
		return nil, newError(codeInternalError, "Internal error: "+err.Error())
	}
	return &toolOutcome{text: string(b), structured: b}, nil
}

type toolRegistry struct {
	mu      sync.Mutex
	dynamic bool
	beta    bool
}

func newToolRegistry(dynamic bool) *toolRegistry { return &toolRegistry{dynamic: dynamic} }

var toolFuncs = map[string]toolFunc{
	"memo_list_memos":       toolListMemos,
	"auth_get_current_user": toolCurrentUser,
	"memo_export_memos":     toolExport,
	"memo_delete_memo":      toolDelete,
	"memo_debug_stats":      toolStats,
	"memo_toggle_beta":      toolToggle,
	"memo_beta_echo":        toolEcho,
}

func (r *toolRegistry) list() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(seedTools)
	out = append(out, defExport, defDelete, defStats)
	if r.dynamic {
		out = append(out, defToggle)
		if r.beta {
			out = append(out, defEcho)
		}
	}
	return out
}

func (r *toolRegistry) lookup(name string) toolFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch name {
	case "memo_toggle_beta":
		if !r.dynamic {
			return nil
		}
	case "memo_beta_echo":
		if !r.dynamic || !r.beta {
			return nil
		}
	}
	return toolFuncs[name]
}

func (r *toolRegistry) toggleBeta() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beta = !r.beta
	return r.beta
}

// callEnv carries the era-specific context of one tools/call.
type callEnv struct {
	s             *server
	req           *request
	modern        bool
	version       string
	elicitation   bool
	logLevel      int // -1: no log notifications
	progressToken json.RawMessage
}

func (e *callEnv) log(level, data string) {
	if e.logLevel < 0 || logLevels[level] < e.logLevel {
		return
	}
	e.s.sendFor(e.req, outNotification{JSONRPC: "2.0", Method: "notifications/message",
		Params: logParams{Level: level, Logger: "memos", Data: data}})
}

func (e *callEnv) progress(progress, total int, message string) {
	if e.progressToken == nil {
		return
	}
	e.s.sendFor(e.req, outNotification{JSONRPC: "2.0", Method: "notifications/progress",
		Params: progressParams{ProgressToken: e.progressToken, Progress: progress, Total: total, Message: message}})
}

// callTool implements tools/call for both eras.
func (s *server) callTool(env *callEnv) (any, *rpcError) {
	var name string
	if json.Unmarshal(env.req.params["name"], &name) != nil || name == "" {
		return nil, newError(codeInvalidParams, "Invalid params: missing tool name")
	}
	fn := s.tools.lookup(name)
	if fn == nil {
		return nil, newError(codeInvalidParams, "Unknown tool: "+name)
	}
	args, ok := parseObject(env.req.params["arguments"])
	if !ok {
		return nil, newError(codeInvalidParams, "Invalid params: arguments must be an object")
	}
	env.log("info", "tools/call "+name)
	out, rerr := fn(env, args)
	if env.req.ctx.Err() != nil {
		return nil, nil
	}
	if rerr != nil || out == nil {
		return nil, rerr
	}
	if out.inputRequired != nil {
		return out.inputRequired, nil
	}
	if out.isError {
		env.log("warning", name+" failed: "+out.text)
	}
	res := callToolResult{
		Content:           []contentBlock{{Type: "text", Text: out.text}},
		StructuredContent: out.structured,
		IsError:           out.isError,
	}
	if env.modern {
		res.ResultType = "complete"
		res.Meta = modernMeta()
	}
	return res, nil
}

// argSet gives typed access to tool arguments; null counts as absent.
type argSet map[string]json.RawMessage

func (a argSet) check(allowed ...string) error {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("unknown argument %q", k)
		}
	}
	return nil
}

func (a argSet) raw(key string) (json.RawMessage, bool) {
	r, ok := a[key]
	if !ok || isNull(r) {
		return nil, false
	}
	return bytes.TrimSpace(r), true
}

func (a argSet) str(key string) (string, bool, error) {
	r, ok := a.raw(key)
	if !ok {
		return "", false, nil
	}
	var s string
	if json.Unmarshal(r, &s) != nil {
		return "", true, fmt.Errorf("%s must be a string", key)
	}
	return s, true, nil
}

func (a argSet) integer(key string) (int, bool, error) {
	r, ok := a.raw(key)
	if !ok {
		return 0, false, nil
	}
	var f float64
	if r[0] == '"' || json.Unmarshal(r, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, true, fmt.Errorf("%s must be an integer", key)
	}
	return int(f), true, nil
}

func (a argSet) boolean(key string) (bool, bool, error) {
	r, ok := a.raw(key)
	if !ok {
		return false, false, nil
	}
	var b bool
	if json.Unmarshal(r, &b) != nil {
		return false, true, fmt.Errorf("%s must be a boolean", key)
	}
	return b, true, nil
}

// argError formats an argument validation failure as a tool error.
func argError(err error) (*toolOutcome, *rpcError) {
	msg := err.Error()
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return toolError("Invalid arguments: %s", msg)
}
