package tasks

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// The table's bounds: a principal at its share loses its own oldest task
// (not another's), expired bindings go, and a reset forgets all.
func TestTableBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	tt := &Table[struct{}]{Now: func() time.Time { return now }}
	tt.Bind("a-first", "a", time.Minute)
	tt.Bind("b-1", "b", time.Minute)
	for i := range MaxTasksPer - 1 {
		tt.Bind(fmt.Sprintf("a-%d", i), "a", time.Hour)
	}
	tt.Bind("a-more", "a", time.Hour) // a at its share: a-first (soonest) goes
	if tt.Owns("a", "a-first") || !tt.Owns("a", "a-more") || !tt.Owns("b", "b-1") {
		t.Error("eviction at a principal's share took the wrong task")
	}
	if tt.Owns("b", "a-more") || tt.Owns("a", "b-1") {
		t.Error("a task owned by another principal")
	}
	now = now.Add(2 * time.Minute)
	if tt.Owns("b", "b-1") {
		t.Error("expired binding still owned")
	}
	tt.Bind("x", "c", 0) // no ttl: the default
	now = now.Add(DefaultTaskTTL - time.Second)
	if !tt.Owns("c", "x") {
		t.Error("default ttl too short")
	}
	tt.Bind("b-1", "b", time.Minute)
	tt.Bind("b-1", "c", time.Minute) // the id handed out again: the new creator owns it
	if tt.Owns("b", "b-1") || !tt.Owns("c", "b-1") {
		t.Error("a re-issued id kept its old owner")
	}
	tt.Reset("")
	if tt.Size() != 0 || tt.Owns("c", "x") {
		t.Error("reset kept tasks")
	}
	for i := range MaxTasks + 10 {
		tt.Bind(fmt.Sprintf("t-%d", i), fmt.Sprintf("p-%d", i%20), time.Hour)
	}
	if n := tt.Size(); n > MaxTasks {
		t.Errorf("table holds %d, cap %d", n, MaxTasks)
	}
}

// FuzzOwnListen: whatever a subscriptions/listen request looks like,
// what the child is sent names no task the caller does not own, read by
// a case-insensitive decoder (Go's) or an exact one (JavaScript's).
func FuzzOwnListen(f *testing.F) {
	for _, s := range []string{
		`{"notifications":{"taskIds":["mine","theirs"]}}`,
		`{"notifications":{"taskIds":["mine"],"taskIds":["theirs"]}}`,
		`{"notifications":{"task\u0049ds":["theirs"]}}`,
		`{"notifications":{},"Notifications":{"task\u0049ds":["theirs"]}}`,
		`{"notifications":{"taskIds":["the\u0069rs"]},"_meta":{}}`,
		`{"notifications":{"toolsListChanged":true}}`,
	} {
		f.Add(s)
	}
	var tt Table[struct{}]
	tt.Bind("mine", "token:a", time.Hour)
	tt.Bind("theirs", "token:b", time.Hour)
	f.Fuzz(func(t *testing.T, params string) {
		var m wire.Message
		if wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":`+params+`}`), &m) != nil || !wire.Valid(m.Raw) {
			return
		}
		out, ok := tt.OwnListen("token:a", &m)
		if !ok {
			return
		}
		var ci struct { // encoding/json matches field names case-insensitively
			Params struct {
				Notifications struct {
					TaskIDs []any `json:"taskIds"`
				} `json:"notifications"`
			} `json:"params"`
		}
		var exact struct {
			Params map[string]json.RawMessage `json:"params"`
		}
		json.Unmarshal(out.Raw, &ci)
		json.Unmarshal(out.Raw, &exact)
		var exactIDs struct {
			TaskIDs []any `json:"taskIds"`
		}
		var notif map[string]json.RawMessage
		json.Unmarshal(exact.Params["notifications"], &notif)
		json.Unmarshal(notif["taskIds"], &exactIDs.TaskIDs)
		for _, id := range append(ci.Params.Notifications.TaskIDs, exactIDs.TaskIDs...) {
			if id == "theirs" {
				t.Fatalf("sent %s for %s", out.Raw, params)
			}
		}
	})
}

// A CreateTaskResult of either era binds its task to the caller, under
// the id the client knows; the child's ids get and lose the process's
// prefix; a tasks/list page and a status notification are the owner's
// alone; a task's progress route goes with its binding.
func TestTableBindsAndFilters(t *testing.T) {
	msg := func(s string) *wire.Message {
		var m wire.Message
		if err := wire.Parse([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	var tt Table[string]
	tt.Reset("r1")
	p := tt.IDPrefix()
	created := msg(`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working","ttl":60000}}}`)
	tt.Expose(created)
	if id := tt.BindCreated(created, "a"); id != p+"t1" || !tt.Owns("a", p+"t1") || tt.Owns("b", p+"t1") {
		t.Fatalf("legacy CreateTaskResult: bound %q (prefix %q)", id, p)
	}
	if id := tt.BindCreated(msg(`{"jsonrpc":"2.0","id":2,"result":{"resultType":"task","taskId":"t2","ttlMs":1}}`), "b"); id != "t2" || !tt.Owns("b", "t2") {
		t.Errorf("modern CreateTaskResult: bound %q", id)
	}
	if id := tt.BindCreated(msg(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`), "a"); id != "" {
		t.Errorf("a plain result bound %q", id)
	}
	if got := tt.Inner(p + "t1"); got != "t1" {
		t.Errorf("Inner = %q", got)
	}
	get := tt.Internal(msg(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"` + p + `t1"}}`))
	if get.TaskID != "t1" {
		t.Errorf("Internal: %s", get.Raw)
	}
	if bare := tt.Internal(msg(`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"t1"}}`)); bare.TaskID != "" {
		t.Errorf("an id without the prefix reached the child as %q", bare.TaskID)
	}
	list := tt.FilterList("a", msg(`{"jsonrpc":"2.0","id":6,"result":{"tasks":[{"taskId":"`+p+`t1"},{"taskId":"t2"}]}}`))
	if want := `{"jsonrpc":"2.0","id":6,"result":{"tasks":[{"taskId":"` + p + `t1"}]}}`; string(list.Raw) != want {
		t.Errorf("FilterList = %s, want %s", list.Raw, want)
	}
	if owner, bound, ok := tt.NotificationOwner(msg(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t2","status":"working"}}`)); !ok || !bound || owner != "b" {
		t.Errorf("NotificationOwner = %q %v %v", owner, bound, ok)
	}
	tt.KeepProgress(p+"t1", 9, "session-a")
	if task, route, ok := tt.Progress(9); !ok || task != p+"t1" || route != "session-a" {
		t.Errorf("Progress = %q %q %v", task, route, ok)
	}
	tt.Bind(p+"t1", "c", time.Hour) // the id handed out again: its progress route goes
	if _, _, ok := tt.Progress(9); ok {
		t.Error("a progress route outlived its binding")
	}
}

// ToolSupport forgets a tool listed without taskSupport and, at its
// bound, remembers no new tool (called without a task) but still updates
// a known one.
func TestToolSupport(t *testing.T) {
	var s ToolSupport
	var m wire.Message
	if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b","execution":{"taskSupport":"optional"}}]}}`), &m); err != nil {
		t.Fatal(err)
	}
	s.NoteList(&m)
	s.Note("b", "")
	if s.Of("a") != "required" || s.Of("b") != "" {
		t.Errorf("a %q b %q", s.Of("a"), s.Of("b"))
	}
	for i := range MaxTools {
		s.Note(fmt.Sprint("t", i), "optional")
	}
	if s.Of(fmt.Sprint("t", MaxTools-1)) != "" {
		t.Error("a tool past the bound was remembered")
	}
	s.Note("a", "optional")
	if s.Of("a") != "optional" {
		t.Error("a known tool was not updated at the bound")
	}
}
