package translate

import (
	"encoding/json"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks across the eras (issue #24). 2025-11-25 has experimental tasks
// (basic/utilities/tasks: the `task` param on tools/call, tasks/get,
// tasks/result, tasks/list, tasks/cancel, notifications/tasks/status);
// 2026-07-28 has the Tasks extension (SEP-2663: CreateTaskResult with
// resultType "task", tasks/get carrying the result inline, tasks/update,
// ack-only tasks/cancel, notifications/tasks). The SEP says they are "not
// wire-compatible"; where the two map — create, poll, cancel, result — the
// functions here translate one into the other, statelessly, for both faces.
// Where they do not (input requested while a task runs, tasks/list of a
// server without one), the capability or the method is withheld: a task
// either works across the pair or is not offered.
//
// The objects handled here (capabilities, one Task) are small, so they are
// decoded and re-encoded; a task's final result is spliced in as is.

// TasksExtension is the Tasks extension's identifier (SEP-2663).
const TasksExtension = "io.modelcontextprotocol/tasks"

// MetaRelatedTask associates a 2025-11-25 message with its task: "All
// requests, notifications, and responses related to a task MUST include the
// io.modelcontextprotocol/related-task key in their _meta field".
const MetaRelatedTask = "io.modelcontextprotocol/related-task"

// legacyTaskCaps is what a legacy peer is offered for a modern server with
// the extension: task-augmented tools/call and tasks/cancel. No tasks/list:
// the extension has none ("Because there is no tasks/list ...").
const legacyTaskCaps = `{"cancel":{},"requests":{"tools":{"call":{}}}}`

// withoutTaskCaps removes both generations' task capabilities from caps.
// The handshake translations call it: a face offers tasks across eras only
// through TasksToModern / TasksToLegacy, once it translates them.
func withoutTaskCaps(caps []byte) []byte {
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil {
		return caps
	}
	_, legacy := c["tasks"]
	var ext map[string]json.RawMessage
	json.Unmarshal(c["extensions"], &ext)
	_, modern := ext[TasksExtension]
	if !legacy && !modern {
		return caps
	}
	delete(c, "tasks")
	if modern {
		delete(ext, TasksExtension)
		if len(ext) == 0 {
			delete(c, "extensions")
		} else {
			c["extensions"], _ = json.Marshal(ext)
		}
	}
	out, _ := json.Marshal(c)
	return out
}

// LegacyServerTasks reports whether a legacy server's capabilities offer
// what the extension needs: task-augmented tools/call and tasks/cancel.
func LegacyServerTasks(caps []byte) bool {
	var c struct {
		Tasks *struct {
			Cancel   json.RawMessage `json:"cancel"`
			Requests struct {
				Tools struct {
					Call json.RawMessage `json:"call"`
				} `json:"tools"`
			} `json:"requests"`
		} `json:"tasks"`
	}
	if json.Unmarshal(caps, &c) != nil || c.Tasks == nil {
		return false
	}
	return isObject(c.Tasks.Cancel) && isObject(c.Tasks.Requests.Tools.Call)
}

// ModernTasks reports whether capabilities (a server's, or a client's
// clientCapabilities) declare the Tasks extension.
func ModernTasks(caps []byte) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return json.Unmarshal(caps, &c) == nil && isObject(c.Extensions[TasksExtension])
}

// ClientDeclaresTasks reports whether a 2026-07-28 request declares the
// extension in its per-request capabilities — without it, "A server MUST
// NOT return CreateTaskResult".
func ClientDeclaresTasks(m *wire.Message) bool {
	sp, ok := wire.Field(m.Raw, m.Meta, wire.MetaClientCapabilities)
	return ok && ModernTasks(m.Bytes(sp))
}

func isObject(b json.RawMessage) bool { return len(b) > 0 && b[0] == '{' }

// TasksToModern returns discover (a DiscoverResult built from the legacy
// InitializeResult init) with the Tasks extension among its capabilities
// when init offers tasks the bridge can translate.
func TasksToModern(discover, init []byte) []byte {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(init, &r) != nil || !LegacyServerTasks(r.Capabilities) {
		return discover
	}
	return editCaps(discover, func(c map[string]json.RawMessage) {
		var ext map[string]json.RawMessage
		json.Unmarshal(c["extensions"], &ext)
		if ext == nil {
			ext = map[string]json.RawMessage{}
		}
		ext[TasksExtension] = json.RawMessage("{}")
		c["extensions"], _ = json.Marshal(ext)
	})
}

// TasksToLegacy returns init (an InitializeResult built from the
// DiscoverResult discover) with the 2025-11-25 tasks capability when
// discover declares the extension.
func TasksToLegacy(init, discover []byte) []byte {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(discover, &r) != nil || !ModernTasks(r.Capabilities) {
		return init
	}
	return editCaps(init, func(c map[string]json.RawMessage) { c["tasks"] = json.RawMessage(legacyTaskCaps) })
}

// editCaps applies edit to the capabilities of result (an object).
func editCaps(result []byte, edit func(map[string]json.RawMessage)) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r == nil {
		return result
	}
	var c map[string]json.RawMessage
	json.Unmarshal(r["capabilities"], &c)
	if c == nil {
		c = map[string]json.RawMessage{}
	}
	edit(c)
	r["capabilities"], _ = json.Marshal(c)
	out, _ := json.Marshal(r)
	return out
}

// ToolTaskSupport returns a legacy tool's execution.taskSupport (the tool
// object at tool in raw); "" when absent.
func ToolTaskSupport(raw []byte, tool wire.Span) string {
	ex, ok := wire.Field(raw, tool, "execution")
	if !ok {
		return ""
	}
	s, _ := wire.StringField(raw, ex, "taskSupport")
	return s
}

// Augment reports whether the bridge, playing a 2026-07-28 server in front
// of a legacy one, makes a tools/call a task: the client declared the
// extension (so it takes either result), and the tool may run as one —
// 2025-11-25 §Tool-Level Negotiation: "If execution.taskSupport is not
// present or "forbidden", clients MUST NOT attempt to invoke the tool as a
// task".
func Augment(clientDeclares bool, taskSupport string) bool {
	return clientDeclares && (taskSupport == "optional" || taskSupport == "required")
}

// NeedsTasks reports whether a tools/call of a client that did not
// declare the extension must be refused: the legacy tool's taskSupport is
// "required" (2025-11-25: "Servers MUST return a -32601 (Method not found)
// error if a client does not attempt to do so"), and SEP-2663 says how a
// 2026-07-28 server refuses it: "If a server is unable to service a request
// to a client that does not declare this extension capability without
// returning CreateTaskResult, the server MUST return an error with the code
// -32021 (Missing Required Client Capability)".
func NeedsTasks(clientDeclares bool, taskSupport string) bool {
	return !clientDeclares && taskSupport == "required"
}

// MissingTasks is that error's response to request id, naming the
// extension in data.requiredCapabilities.
func MissingTasks(id []byte) []byte {
	return wire.ErrorResponse(id, wire.CodeMissingCapability, "Missing required client capability: the tool runs only as a task",
		[]byte(`{"requiredCapabilities":{"extensions":{"`+TasksExtension+`":{}}}}`))
}

// AugmentField is the params member that makes a legacy tools/call a task.
const AugmentField = `"task":{}`

// IsAugmented reports whether a legacy request asks to run as a task.
func IsAugmented(m *wire.Message) bool {
	_, ok := wire.Field(m.Raw, m.Params, "task")
	return ok
}

// CapsWithTasks returns a 2026-07-28 clientCapabilities object (caps) with
// the extension declared, for the modern request a task-augmented legacy
// request becomes.
func CapsWithTasks(caps []byte) []byte {
	if len(caps) == 0 {
		caps = []byte("{}")
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil || c == nil {
		c = map[string]json.RawMessage{}
	}
	var ext map[string]json.RawMessage
	json.Unmarshal(c["extensions"], &ext)
	if ext == nil {
		ext = map[string]json.RawMessage{}
	}
	ext[TasksExtension] = json.RawMessage("{}")
	c["extensions"], _ = json.Marshal(ext)
	out, _ := json.Marshal(c)
	return out
}

// renames maps the Task members whose names differ, legacy → modern.
var renames = [...][2]string{{"ttl", "ttlMs"}, {"pollInterval", "pollIntervalMs"}}

// taskFields are the members of a Task (both generations' spellings).
var taskFields = map[string]bool{
	"taskId": true, "status": true, "statusMessage": true, "createdAt": true, "lastUpdatedAt": true,
	"ttl": true, "pollInterval": true, "ttlMs": true, "pollIntervalMs": true,
}

// task decodes a Task object, keeping only Task members, renamed to the
// era wanted (modern or not).
func task(obj []byte, modern bool) (map[string]json.RawMessage, bool) {
	var t map[string]json.RawMessage
	if json.Unmarshal(obj, &t) != nil || t == nil {
		return nil, false
	}
	if id, ok := t["taskId"]; !ok || len(id) == 0 || id[0] != '"' {
		return nil, false
	}
	for k := range t {
		if !taskFields[k] {
			delete(t, k)
		}
	}
	for _, r := range renames {
		from, to := r[0], r[1]
		if !modern {
			from, to = to, from
		}
		if v, ok := t[from]; ok {
			delete(t, from)
			t[to] = v
		}
	}
	return t, true
}

// encoded is (b, ok) for what encode built: nil when a member was not
// JSON after all.
func encoded(b []byte) ([]byte, bool) { return b, b != nil }

func encode(m map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(m)
	return b
}

// CreateTaskToModern returns the 2026-07-28 CreateTaskResult for a legacy
// one ({"task":{…}}, result object); ok is false when result is no task.
// The result's _meta (io.modelcontextprotocol/model-immediate-response)
// stays.
func CreateTaskToModern(result []byte) ([]byte, bool) {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return nil, false
	}
	t, ok := task(r["task"], true)
	if !ok {
		return nil, false
	}
	t["resultType"] = json.RawMessage(`"task"`)
	if meta, ok := r["_meta"]; ok {
		t["_meta"] = meta
	}
	return encoded(encode(t))
}

// CreateTaskToLegacy returns the 2025-11-25 CreateTaskResult for a modern
// one (resultType "task"); ok is false when result is no task.
func CreateTaskToLegacy(result []byte) ([]byte, bool) {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || string(r["resultType"]) != `"task"` {
		return nil, false
	}
	t, ok := task(result, false)
	if !ok {
		return nil, false
	}
	out := map[string]json.RawMessage{"task": encode(t)}
	if meta, ok := r["_meta"]; ok {
		out["_meta"] = meta
	}
	return encoded(encode(out))
}

// TaskStatus returns the status of a Task object ("" if none).
func TaskStatus(obj []byte) string {
	var t struct {
		Status string `json:"status"`
	}
	json.Unmarshal(obj, &t)
	return t.Status
}

// Terminal reports whether a task status is final.
func Terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// NeedsFinal reports whether a legacy task of status has a final outcome
// that tasks/result returns and SEP-2663's tasks/get carries inline.
func NeedsFinal(status string) bool { return status == "completed" || status == "failed" }

// ErrInputAcrossEras is why a legacy task that asks for input fails for a
// modern client: 2025-11-25 delivers the request on a tasks/result stream,
// SEP-2663 in tasks/get's inputRequests answered by tasks/update — the
// bridge does not carry one into the other, so the task ends rather than
// wait for an answer that cannot come.
const ErrInputAcrossEras = "mcp-bridge: the task needs input from the client, which the bridge does not carry between 2025-11-25 tasks and the 2026-07-28 Tasks extension; the task was cancelled"

// TaskToModern returns SEP-2663's tasks/get result for a legacy tasks/get
// result (getResult) and, for a completed or failed task, the legacy
// tasks/result response (final): "If the status is completed, the server
// MUST return a Task object with status completed and a result field";
// failed, "the error field MUST contain that JSON-RPC error". A task the
// legacy server holds in input_required is reported failed with
// ErrInputAcrossEras (the caller cancels it at the server).
func TaskToModern(getResult []byte, final *wire.Message) ([]byte, bool) {
	t, ok := task(getResult, true)
	if !ok {
		return nil, false
	}
	t["resultType"] = json.RawMessage(`"complete"`)
	status := TaskStatus(getResult)
	switch {
	case status == "input_required":
		t["status"] = json.RawMessage(`"failed"`)
		t["error"] = errorObject(wire.CodeInternalError, ErrInputAcrossEras)
	case NeedsFinal(status) && final != nil && final.Error.Present():
		t["status"] = json.RawMessage(`"failed"`)
		t["error"] = json.RawMessage(final.Bytes(final.Error))
	case NeedsFinal(status) && final != nil && final.Result.Present():
		t["status"] = json.RawMessage(`"completed"`)
		t["result"] = resultWithoutRelated(final)
	case NeedsFinal(status):
		// A terminal task whose outcome could not be read: failed, not a
		// completed task without its result.
		t["status"] = json.RawMessage(`"failed"`)
		t["error"] = errorObject(wire.CodeInternalError, "mcp-bridge: the server did not return the task's result")
	}
	return encoded(encode(t))
}

// resultWithoutRelated is a tasks/result result with the related-task
// _meta entry dropped (SEP-2663 carries the task id beside it already).
func resultWithoutRelated(final *wire.Message) json.RawMessage {
	res := final.Bytes(final.Result)
	var m wire.Message
	if wire.Parse(wire.ResultResponse([]byte("0"), res), &m) != nil {
		return res
	}
	meta, ok := wire.Field(m.Raw, m.Result, "_meta")
	if !ok {
		return res
	}
	out := wire.WithoutFields(m.Raw, meta, MetaRelatedTask)
	var om wire.Message
	if wire.Parse(out, &om) != nil {
		return res
	}
	return json.RawMessage(om.Bytes(om.Result))
}

func errorObject(code int, msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	return b
}

// TaskToLegacy returns the 2025-11-25 Task for SEP-2663's tasks/get result
// (a DetailedTask): the inline result, error and inputRequests are not
// part of it (a legacy client reads the outcome with tasks/result).
func TaskToLegacy(getResult []byte) ([]byte, bool) {
	t, ok := task(getResult, false)
	if !ok {
		return nil, false
	}
	return encoded(encode(t))
}

// Ack is SEP-2663's tasks/cancel and tasks/update result: "The server MUST
// acknowledge the request with an empty result" with resultType
// "complete".
var Ack = []byte(`{"resultType":"complete"}`)

// Outcome is what a legacy client's tasks/result returns for a terminal
// SEP-2663 task (getResult, a DetailedTask): "exactly what the underlying
// request would have returned" — its result, with the related-task _meta
// the 2025-11-25 text shows, or its JSON-RPC error. A cancelled task
// returns an error. ok is false while the task is not terminal.
func Outcome(getResult []byte, taskID string) (result, errObj []byte, ok bool) {
	var t struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(getResult, &t) != nil || !Terminal(t.Status) {
		return nil, nil, false
	}
	switch {
	case t.Status == "completed" && isObject(t.Result):
		return withRelated(t.Result, taskID), nil, true
	case t.Status == "failed" && isObject(t.Error):
		return nil, t.Error, true
	case t.Status == "cancelled":
		return nil, errorObject(wire.CodeInternalError, "mcp-bridge: the task was cancelled"), true
	}
	return nil, errorObject(wire.CodeInternalError, "mcp-bridge: the server reported the task "+t.Status+" without its outcome"), true
}

// withRelated adds _meta.related-task {taskId} to result (an object).
func withRelated(result []byte, taskID string) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return result
	}
	var meta map[string]json.RawMessage
	json.Unmarshal(r["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[MetaRelatedTask] = encode(map[string]json.RawMessage{"taskId": json.RawMessage(wire.AppendString(nil, taskID))})
	r["_meta"] = encode(meta)
	return encode(r)
}

// ToolsWithTaskSupport returns a tools/list result (object) for a legacy
// client of a server with the extension: each tool without
// execution.taskSupport gets "optional" — under SEP-2663 any tool call may
// become a task, while a 2025-11-25 client "MUST NOT" augment a tool that
// does not say so.
func ToolsWithTaskSupport(result []byte) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r == nil {
		return result
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(r["tools"], &tools) != nil {
		return result
	}
	for _, tool := range tools {
		var ex map[string]json.RawMessage
		json.Unmarshal(tool["execution"], &ex)
		if ex == nil {
			ex = map[string]json.RawMessage{}
		}
		if _, ok := ex["taskSupport"]; !ok {
			ex["taskSupport"] = json.RawMessage(`"optional"`)
		}
		tool["execution"] = encode(ex)
	}
	r["tools"], _ = json.Marshal(tools)
	return encode(r)
}

// Polling bounds for a legacy peer's tasks/result on a modern peer, which
// "MUST block the response until the task reaches a terminal status": the
// bridge polls tasks/get at the peer's pollIntervalMs, within these.
const (
	MinTaskPoll     = 20 * time.Millisecond
	MaxTaskPoll     = 5 * time.Second
	DefaultTaskPoll = 500 * time.Millisecond
)

// PollInterval is a tasks/get result's pollIntervalMs, within
// [MinTaskPoll, MaxTaskPoll]; DefaultTaskPoll when it is absent or not a
// non-negative integer.
func PollInterval(resp *wire.Message) time.Duration {
	sp, ok := wire.Field(resp.Raw, resp.Result, "pollIntervalMs")
	if !ok {
		return DefaultTaskPoll
	}
	var ms int64
	for _, c := range resp.Bytes(sp) {
		if c < '0' || c > '9' || ms > 1e9 {
			return DefaultTaskPoll
		}
		ms = ms*10 + int64(c-'0')
	}
	return min(max(time.Duration(ms)*time.Millisecond, MinTaskPoll), MaxTaskPoll)
}

// AugmentCall is a tools/call m as it goes to a 2025-11-25 peer: any `task`
// member the client sent is dropped (SEP-2663: servers "MUST ignore it"),
// and, when augment (the face's Augment decision), the bridge's own
// AugmentField is added. m itself when nothing changes or m is not a
// tools/call with object params.
func AugmentCall(m *wire.Message, augment bool) *wire.Message {
	if m.Method != "tools/call" || !m.Params.Present() || m.Raw[m.Params.Start] != '{' {
		return m
	}
	raw := wire.WithoutFields(m.Raw, m.Params, "task")
	if !augment && len(raw) == len(m.Raw) {
		return m
	}
	var nm wire.Message
	if wire.Parse(raw, &nm) != nil {
		return m
	}
	if !augment {
		return &nm
	}
	var am wire.Message
	if wire.Parse(wire.WithParamsFields(&nm, []byte(AugmentField)), &am) != nil {
		return m
	}
	return &am
}
