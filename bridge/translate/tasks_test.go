package translate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The capabilities: withheld by the handshake translations, added back by
// the faces that translate tasks, and only where the other side offers
// what the mapping needs (tools/call tasks and tasks/cancel).
func TestTaskCapabilities(t *testing.T) {
	legacy := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"s","version":"1"}}`
	disc := DiscoverFromInitialize([]byte(legacy))
	jsonEq(t, "withheld toward a modern peer", disc, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`)
	jsonEq(t, "offered when translated", TasksToModern(disc, []byte(legacy)), `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`)
	noCancel := `{"capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}}}`
	if got := TasksToModern(disc, []byte(noCancel)); string(got) != string(disc) {
		t.Errorf("a legacy server without tasks/cancel: %s, want the extension withheld", got)
	}

	modern := `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{},"x/y":{}}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}}`
	init := InitializeFromDiscover([]byte(modern), Legacy)
	jsonEq(t, "withheld toward a legacy peer", init, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"extensions":{"x/y":{}}},"serverInfo":{"name":"m","version":"1"}}`)
	jsonEq(t, "offered when translated", TasksToLegacy(init, []byte(modern)), `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"extensions":{"x/y":{}},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"m","version":"1"}}`)
	plain := `{"capabilities":{"tools":{}}}`
	if got := TasksToLegacy(init, []byte(plain)); string(got) != string(init) {
		t.Errorf("a modern server without the extension: %s", got)
	}

	m := parse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`)
	if !ClientDeclaresTasks(m) || ClientDeclaresTasks(parse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"tasks":{}}}}}`)) {
		t.Error("ClientDeclaresTasks")
	}
	jsonEq(t, "client caps", CapsWithTasks([]byte(`{"sampling":{}}`)), `{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	for support, want := range map[string]bool{"optional": true, "required": true, "forbidden": false, "": false} {
		if Augment(true, support) != want || Augment(false, support) {
			t.Errorf("Augment(%q)", support)
		}
	}
	tools := parse(t, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b"}]}}`)
	if ToolTaskSupport(tools.Raw, mustElem(t, tools, 0)) != "required" || ToolTaskSupport(tools.Raw, mustElem(t, tools, 1)) != "" {
		t.Error("ToolTaskSupport")
	}
	jsonEq(t, "tools for a legacy client", ToolsWithTaskSupport(tools.Bytes(tools.Result)), `{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b","execution":{"taskSupport":"optional"}}]}`)
}

// The task shapes both ways: CreateTaskResult, tasks/get, the outcome.
func TestTaskShapes(t *testing.T) {
	legacyCreate := `{"task":{"taskId":"t1","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":60000,"pollInterval":100},"_meta":{"io.modelcontextprotocol/model-immediate-response":"later"}}`
	modernCreate := `{"resultType":"task","taskId":"t1","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":60000,"pollIntervalMs":100,"_meta":{"io.modelcontextprotocol/model-immediate-response":"later"}}`
	got, ok := CreateTaskToModern([]byte(legacyCreate))
	if !ok {
		t.Fatal("CreateTaskToModern: not a task")
	}
	jsonEq(t, "create to modern", got, modernCreate)
	got, ok = CreateTaskToLegacy([]byte(modernCreate))
	if !ok {
		t.Fatal("CreateTaskToLegacy: not a task")
	}
	jsonEq(t, "create to legacy", got, legacyCreate)
	for _, notTask := range []string{`{"content":[]}`, `{"resultType":"complete","taskId":"x"}`, `{"task":{"taskId":7}}`, `[]`} {
		if _, ok := CreateTaskToModern([]byte(notTask)); ok {
			t.Errorf("CreateTaskToModern(%s) is a task", notTask)
		}
		if _, ok := CreateTaskToLegacy([]byte(notTask)); ok {
			t.Errorf("CreateTaskToLegacy(%s) is a task", notTask)
		}
	}

	working := `{"taskId":"t1","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":null}`
	got, _ = TaskToModern([]byte(working), nil)
	jsonEq(t, "working", got, `{"resultType":"complete","taskId":"t1","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null}`)
	done := `{"taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttl":1}`
	final := parse(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"},"k":1}}}`)
	got, _ = TaskToModern([]byte(done), final)
	jsonEq(t, "completed", got, `{"resultType":"complete","taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttlMs":1,"result":{"content":[{"type":"text","text":"ok"}],"_meta":{"k":1}}}`)
	failed := parse(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"boom"}}`)
	got, _ = TaskToModern([]byte(`{"taskId":"t1","status":"failed","createdAt":"c","lastUpdatedAt":"u","ttl":1}`), failed)
	jsonEq(t, "failed", got, `{"resultType":"complete","taskId":"t1","status":"failed","createdAt":"c","lastUpdatedAt":"u","ttlMs":1,"error":{"code":-32000,"message":"boom"}}`)
	got, _ = TaskToModern([]byte(done), nil)
	if TaskStatus(got) != "failed" {
		t.Errorf("completed without its outcome: %s, want failed", got)
	}
	got, _ = TaskToModern([]byte(`{"taskId":"t1","status":"input_required","createdAt":"c","lastUpdatedAt":"u","ttl":1}`), nil)
	if TaskStatus(got) != "failed" {
		t.Errorf("input_required across eras: %s, want failed", got)
	}

	detailed := `{"resultType":"complete","taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttlMs":5,"pollIntervalMs":9,"result":{"content":[]}}`
	got, _ = TaskToLegacy([]byte(detailed))
	jsonEq(t, "tasks/get to legacy", got, `{"taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttl":5,"pollInterval":9}`)
	res, errObj, ok := Outcome([]byte(detailed), "t1")
	if !ok || errObj != nil {
		t.Fatalf("Outcome of a completed task: %s %s %v", res, errObj, ok)
	}
	jsonEq(t, "outcome", res, `{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`)
	if _, errObj, ok := Outcome([]byte(`{"taskId":"t1","status":"failed","error":{"code":1,"message":"m"}}`), "t1"); !ok || string(errObj) != `{"code":1,"message":"m"}` {
		t.Errorf("Outcome of a failed task: %s", errObj)
	}
	if _, errObj, ok := Outcome([]byte(`{"taskId":"t1","status":"cancelled"}`), "t1"); !ok || errObj == nil {
		t.Error("Outcome of a cancelled task: want an error")
	}
	if _, _, ok := Outcome([]byte(`{"taskId":"t1","status":"working"}`), "t1"); ok {
		t.Error("Outcome of a working task")
	}
}

func mustElem(t *testing.T, m *wire.Message, i int) wire.Span {
	t.Helper()
	tools, _ := wire.Field(m.Raw, m.Result, "tools")
	elems, err := wire.Elements(m.Raw, tools)
	if err != nil || len(elems) <= i {
		t.Fatalf("tools: %v", err)
	}
	return elems[i]
}

// FuzzTaskShapes: whatever a server sends as a task, a tasks/get result,
// a tools/list result or capabilities, the mapping does not panic, and
// what it builds is JSON.
func FuzzTaskShapes(f *testing.F) {
	for _, s := range []string{
		`{"task":{"taskId":"t1","status":"working","ttl":1,"pollInterval":2},"_meta":{}}`,
		`{"resultType":"task","taskId":"t1","status":"working","ttlMs":null}`,
		`{"resultType":"complete","taskId":"t1","status":"completed","result":{"content":[]}}`,
		`{"taskId":"t1","status":"failed","error":{"code":1,"message":"m"}}`,
		`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b","execution":null}]}`,
		`{"capabilities":{"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`,
		`{"taskId":"t1","taskId":2}`, `[]`, `null`, `{"task":null}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := []byte(s)
		check := func(what string, out []byte) {
			if out != nil && !json.Valid(out) {
				t.Fatalf("%s(%s) = %s, not JSON", what, s, out)
			}
		}
		checkOK := func(what string, out []byte, ok bool) {
			if ok && out == nil {
				t.Fatalf("%s(%s): ok without a result", what, s)
			}
			check(what, out)
		}
		out, ok := CreateTaskToModern(in)
		checkOK("CreateTaskToModern", out, ok)
		out, ok = CreateTaskToLegacy(in)
		checkOK("CreateTaskToLegacy", out, ok)
		out, ok = TaskToLegacy(in)
		checkOK("TaskToLegacy", out, ok)
		var final wire.Message
		if json.Valid(in) && wire.Parse(wire.ResultResponse([]byte("1"), in), &final) == nil {
			out, ok := TaskToModern(in, &final)
			checkOK("TaskToModern", out, ok)
		}
		if res, errObj, ok := Outcome(in, "t"); ok {
			check("Outcome", res)
			check("Outcome", errObj)
		}
		if json.Valid(in) {
			check("ToolsWithTaskSupport", ToolsWithTaskSupport(in))
			check("TasksToModern", TasksToModern(in, in))
			check("TasksToLegacy", TasksToLegacy(in, in))
			check("CapsWithTasks", CapsWithTasks(in))
			check("withoutTaskCaps", withoutTaskCaps(in))
		}
	})
}

// TestPollInterval: a peer's pollIntervalMs is honoured within the bounds,
// and anything that is not a plain non-negative integer means the default.
func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		result string
		want   time.Duration
	}{
		{`{"pollIntervalMs":250}`, 250 * time.Millisecond},
		{`{"pollIntervalMs":1}`, MinTaskPoll},
		{`{"pollIntervalMs":600000}`, MaxTaskPoll},
		{`{"pollIntervalMs":99999999999999999999}`, DefaultTaskPoll},
		{`{"pollIntervalMs":-5}`, DefaultTaskPoll},
		{`{"pollIntervalMs":2.5}`, DefaultTaskPoll},
		{`{"pollIntervalMs":"100"}`, DefaultTaskPoll},
		{`{}`, DefaultTaskPoll},
	} {
		var m wire.Message
		if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":`+tc.result+`}`), &m); err != nil {
			t.Fatal(err)
		}
		if got := PollInterval(&m); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.result, got, tc.want)
		}
	}
}

// TestAugmentCall: a client's own `task` member never reaches a legacy
// peer; the bridge's is added only when the face decided to augment.
func TestAugmentCall(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		augment  bool
		want     string // "" means m itself
	}{
		{"plain, no augment", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`, false, ""},
		{"plain, augment", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`, true, `"task":{}`},
		{"client task dropped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{"ttl":5}}}`, false, "-task"},
		{"client task replaced", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{"ttl":5}}}`, true, `"task":{}`},
		{"not a call", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task":{}}}`, true, ""},
	} {
		var m wire.Message
		if err := wire.Parse([]byte(tc.in), &m); err != nil {
			t.Fatal(err)
		}
		got := AugmentCall(&m, tc.augment)
		switch {
		case tc.want == "":
			if got != &m {
				t.Errorf("%s: changed to %s", tc.name, got.Raw)
			}
		case tc.want == "-task":
			if got == &m || strings.Contains(string(got.Raw), `"task"`) {
				t.Errorf("%s: %s", tc.name, got.Raw)
			}
		default:
			if strings.Count(string(got.Raw), `"task"`) != 1 || !strings.Contains(string(got.Raw), tc.want) || strings.Contains(string(got.Raw), "ttl") {
				t.Errorf("%s: %s", tc.name, got.Raw)
			}
		}
	}
}
