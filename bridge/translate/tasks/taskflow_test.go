package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// fake is a Front and a Back in one: the answer the caller got, and the
// requests the bridge made of the back, answered from a script.
type fake struct {
	own      Ownership
	answer   string
	relayed  string
	failed   error
	asked    []string
	script   map[string][]string // method -> results, one per request (the last repeats)
	waits    int
	waitErr  error
	support  string
	begun    bool
	beginErr error
}

func (f *fake) Owns(string) Ownership     { return f.own }
func (f *fake) Answer(raw []byte)         { f.answer = string(raw) }
func (f *fake) Relay(resp *wire.Message)  { f.relayed = string(resp.Raw) }
func (f *fake) Fail(err error)            { f.failed = err }
func (f *fake) TaskSupport(string) string { return f.support }
func (f *fake) Begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	f.begun = true
	return ctx, func() {}, f.beginErr
}

func (f *fake) Request(_ context.Context, method, taskID string) (*wire.Message, error) {
	f.asked = append(f.asked, method+" "+taskID)
	rs := f.script[method]
	if len(rs) == 0 {
		return nil, errors.New("unscripted " + method)
	}
	r := rs[0]
	if len(rs) > 1 {
		f.script[method] = rs[1:]
	}
	var m wire.Message
	if err := wire.Parse([]byte(r), &m); err != nil {
		panic(err)
	}
	return &m, nil
}

func (f *fake) Wait(context.Context, time.Duration) error {
	f.waits++
	return f.waitErr
}

func req(t *testing.T, method, params string) *wire.Message {
	t.Helper()
	var m wire.Message
	if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+params+`}}`), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

func res(result string) string { return `{"jsonrpc":"2.0","id":0,"result":` + result + `}` }

// A SEP-2663 tasks/get of a finished legacy task is two requests, the
// outcome inline; an update of a task the bridge bound asks nothing; a
// cancel answers with an ack; tasks/result is no method; another's task
// is not found without asking the back.
func TestModernOverLegacy(t *testing.T) {
	ctx := context.Background()
	get := req(t, "tasks/get", `"taskId":"t1"`)

	f := &fake{own: Bound, script: map[string][]string{
		"tasks/get":    {res(`{"taskId":"t1","status":"completed","ttl":60000}`)},
		"tasks/result": {res(`{"content":[{"type":"text","text":"done"}],"_meta":{"` + translate.MetaRelatedTask + `":{"taskId":"t1"}}}`)},
	}}
	if !ModernOverLegacy(ctx, f, f, get, get.IDBytes()) {
		t.Fatal("tasks/get not handled")
	}
	if strings.Join(f.asked, ",") != "tasks/get t1,tasks/result t1" {
		t.Errorf("asked %v, want tasks/get then tasks/result", f.asked)
	}
	if !strings.Contains(f.answer, `"status":"completed"`) || !strings.Contains(f.answer, `"text":"done"`) || !strings.Contains(f.answer, `"ttlMs":60000`) || strings.Contains(f.answer, translate.MetaRelatedTask) {
		t.Errorf("answer %s, want the completed task with its result inline", f.answer)
	}

	f = &fake{own: Bound, script: map[string][]string{"tasks/get": {res(`{"taskId":"t1","status":"input_required"}`)}, "tasks/cancel": {res(`{}`)}}}
	ModernOverLegacy(ctx, f, f, get, get.IDBytes())
	if strings.Join(f.asked, ",") != "tasks/get t1,tasks/cancel t1" || !strings.Contains(f.answer, `"status":"failed"`) {
		t.Errorf("input_required: asked %v, answer %s; want the task cancelled and reported failed", f.asked, f.answer)
	}

	upd := req(t, "tasks/update", `"taskId":"t1","inputResponses":{}`)
	f = &fake{own: Bound}
	ModernOverLegacy(ctx, f, f, upd, upd.IDBytes())
	if len(f.asked) != 0 || f.answer != string(wire.ResultResponse([]byte("7"), translate.Ack)) {
		t.Errorf("update of a bound task: asked %v, answer %s; want an ack, nothing asked", f.asked, f.answer)
	}
	f = &fake{own: Unchecked, script: map[string][]string{"tasks/get": {`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"no such task"}}`}}}
	ModernOverLegacy(ctx, f, f, upd, upd.IDBytes())
	if strings.Join(f.asked, ",") != "tasks/get t1" || !strings.Contains(f.relayed, "no such task") {
		t.Errorf("update of an unchecked task: asked %v, relayed %s; want the back's tasks/get error", f.asked, f.relayed)
	}

	cancel := req(t, "tasks/cancel", `"taskId":"t1"`)
	f = &fake{own: Unchecked, script: map[string][]string{"tasks/cancel": {res(`{"taskId":"t1","status":"cancelled"}`)}}}
	ModernOverLegacy(ctx, f, f, cancel, cancel.IDBytes())
	if f.answer != string(wire.ResultResponse([]byte("7"), translate.Ack)) {
		t.Errorf("cancel: %s, want an ack", f.answer)
	}

	for _, method := range []string{"tasks/result", "tasks/list"} {
		f = &fake{own: Bound}
		m := req(t, method, `"taskId":"t1"`)
		if !ModernOverLegacy(ctx, f, f, m, m.IDBytes()) || !strings.Contains(f.answer, "-32601") || f.begun {
			t.Errorf("%s: %s, want -32601 from the bridge", method, f.answer)
		}
	}
	f = &fake{own: NotOwned}
	ModernOverLegacy(ctx, f, f, get, get.IDBytes())
	if !strings.Contains(f.answer, `-32602`) || !strings.Contains(f.answer, ErrTaskNotFound) || f.begun || len(f.asked) != 0 {
		t.Errorf("another's task: %s (back begun %v), want -32602 %s without the back", f.answer, f.begun, ErrTaskNotFound)
	}
	f = &fake{own: Bound, beginErr: errors.New("no session")}
	ModernOverLegacy(ctx, f, f, get, get.IDBytes())
	if f.failed == nil || len(f.asked) != 0 {
		t.Errorf("back not ready: failed %v, asked %v", f.failed, f.asked)
	}
	call := req(t, "tools/call", `"name":"x"`)
	if f := (&fake{}); ModernOverLegacy(ctx, f, f, call, call.IDBytes()) || ModernIntercepts("tools/call") {
		t.Error("a tools/call is no tasks request")
	}
}

// A legacy tasks/result of a SEP-2663 task polls tasks/get until it is
// terminal; a legacy tasks/cancel reads the task back after the ack.
func TestLegacyOverModern(t *testing.T) {
	ctx := context.Background()
	result := req(t, "tasks/result", `"taskId":"t1"`)
	f := &fake{own: Bound, script: map[string][]string{"tasks/get": {
		res(`{"taskId":"t1","status":"working","pollIntervalMs":10}`),
		res(`{"taskId":"t1","status":"working"}`),
		res(`{"taskId":"t1","status":"completed","resultType":"complete","result":{"content":[]}}`),
	}}}
	if !LegacyOverModern(ctx, f, f, result, result.IDBytes()) {
		t.Fatal("tasks/result not handled")
	}
	if len(f.asked) != 3 || f.waits != 2 {
		t.Errorf("asked %v, waited %d times; want three polls, two waits", f.asked, f.waits)
	}
	if !strings.Contains(f.answer, `"content":[]`) || !strings.Contains(f.answer, translate.MetaRelatedTask) {
		t.Errorf("answer %s, want the result with its related-task", f.answer)
	}

	f = &fake{own: Bound, waitErr: errors.New("stopped"), script: map[string][]string{"tasks/get": {res(`{"taskId":"t1","status":"working"}`)}}}
	LegacyOverModern(ctx, f, f, result, result.IDBytes())
	if f.failed == nil || f.answer != "" {
		t.Errorf("a wait that ends: failed %v, answer %q; want the wait's error", f.failed, f.answer)
	}

	f = &fake{own: Bound, script: map[string][]string{"tasks/get": {res(`{"taskId":"t1","status":"input_required"}`)}, "tasks/cancel": {res(string(translate.Ack))}}}
	LegacyOverModern(ctx, f, f, result, result.IDBytes())
	if strings.Join(f.asked, ",") != "tasks/get t1,tasks/cancel t1" || !strings.Contains(f.answer, translate.ErrInputAcrossEras) {
		t.Errorf("input_required: asked %v, answer %s", f.asked, f.answer)
	}

	cancel := req(t, "tasks/cancel", `"taskId":"t1"`)
	f = &fake{own: Unchecked, script: map[string][]string{
		"tasks/cancel": {res(string(translate.Ack))},
		"tasks/get":    {res(`{"taskId":"t1","status":"cancelled","ttlMs":1000,"resultType":"complete"}`)},
	}}
	LegacyOverModern(ctx, f, f, cancel, cancel.IDBytes())
	if strings.Join(f.asked, ",") != "tasks/cancel t1,tasks/get t1" || f.answer != `{"jsonrpc":"2.0","id":7,"result":{"status":"cancelled","taskId":"t1","ttl":1000}}` {
		t.Errorf("cancel: asked %v, answer %s; want the task read back in 2025-11-25 form", f.asked, f.answer)
	}

	f = &fake{own: NotOwned}
	LegacyOverModern(ctx, f, f, cancel, cancel.IDBytes())
	if !strings.Contains(f.answer, ErrTaskNotFound) || len(f.asked) != 0 {
		t.Errorf("another's task: %s, asked %v", f.answer, f.asked)
	}
	list := req(t, "tasks/list", ``)
	f = &fake{}
	if !LegacyOverModern(ctx, f, f, list, list.IDBytes()) || !strings.Contains(f.answer, "-32601") {
		t.Errorf("tasks/list: %s, want -32601", f.answer)
	}
	get := req(t, "tasks/get", `"taskId":"t1"`)
	if f := (&fake{}); LegacyOverModern(ctx, f, f, get, get.IDBytes()) || LegacyIntercepts("tasks/get") {
		t.Error("a legacy tasks/get is forwarded, not answered here")
	}
}

// RefuseCall answers only a tools/call of a task-only tool from a front
// without the extension; AugmentCall makes a task of a tool that may be one.
func TestCallsOfLegacyTools(t *testing.T) {
	plain := req(t, "tools/call", `"name":"x"`)
	declared := req(t, "tools/call", `"name":"x","_meta":{"`+wire.MetaClientCapabilities+`":{"extensions":{"`+translate.TasksExtension+`":{}}}}`)
	if r := RefuseCall(plain, &fake{support: "required"}, plain.IDBytes()); !strings.Contains(string(r), "-32021") {
		t.Errorf("task-only tool, undeclared: %s, want -32021", r)
	}
	for _, c := range []struct {
		m       *wire.Message
		support string
	}{{declared, "required"}, {plain, "optional"}, {plain, ""}} {
		if r := RefuseCall(c.m, &fake{support: c.support}, nil); r != nil {
			t.Errorf("support %q: refused %s", c.support, r)
		}
	}
	if m := AugmentCall(declared, &fake{support: "optional"}); !translate.IsAugmented(m) {
		t.Errorf("declared, optional: %s, want a task", m.Raw)
	}
	if m := AugmentCall(declared, &fake{}); translate.IsAugmented(m) {
		t.Errorf("back offers no tasks: %s, want no task", m.Raw)
	}
}

// Results take the front's era: a task either way, tools a legacy front may
// call as tasks only when the back offers them.
func TestResultShapes(t *testing.T) {
	parse := func(s string) *wire.Message {
		var m wire.Message
		if err := wire.Parse([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	if m := ResultToModern("tools/call", parse(res(`{"task":{"taskId":"a","status":"working","ttl":5}}`))); !strings.Contains(string(m.Raw), `"resultType":"task"`) || !strings.Contains(string(m.Raw), `"ttlMs":5`) {
		t.Errorf("to modern: %s", m.Raw)
	}
	if m := ResultToLegacy("tools/call", parse(res(`{"resultType":"task","taskId":"a","status":"working"}`)), false); !strings.Contains(string(m.Raw), `"task":{`) {
		t.Errorf("to legacy: %s", m.Raw)
	}
	tools := res(`{"tools":[{"name":"a"}]}`)
	if m := ResultToLegacy("tools/list", parse(tools), false); string(m.Raw) != tools {
		t.Errorf("tools of a back without tasks changed: %s", m.Raw)
	}
	if m := ResultToLegacy("tools/list", parse(tools), true); !strings.Contains(string(m.Raw), `"taskSupport":"optional"`) {
		t.Errorf("tools of a back with tasks: %s", m.Raw)
	}
	if m := parse(res(`{"content":[]}`)); ResultToModern("tools/call", m) != m || ResultToLegacy("resources/list", m, true) != m {
		t.Error("a result that is no task changed")
	}
}

// A tools/call to a back that offers no tasks costs the tasks machinery
// no allocation: the front's capabilities are not decoded for it.
func TestCallWithoutTasksAllocatesNothing(t *testing.T) {
	m := req(t, "tools/call", `"name":"x","_meta":{"`+wire.MetaClientCapabilities+`":{"extensions":{"`+translate.TasksExtension+`":{}}}}`)
	none := &fake{}
	if n := testing.AllocsPerRun(100, func() {
		if RefuseCall(m, none, nil) != nil || AugmentCall(m, none) != m {
			t.Fatal("a call changed")
		}
	}); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
