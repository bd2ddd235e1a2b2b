package taskchild

import (
	"strings"
	"testing"
)

// TasksMeta is a 2026-07-28 request's _meta member declaring the Tasks
// extension.
const TasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}}`

// Lifecycle drives acceptance item 1 of issue #24 with a client whose
// call sends a request and returns its response: a
// task created with tools/call "job" is polled with tasks/get to its
// result (a 2025-11-25 client then reads it with tasks/result); another,
// "slow", is cancelled and reads back cancelled.
func Lifecycle(t testing.TB, call func(method, params string) map[string]any, legacy bool) {
	t.Helper()
	augment := ""
	if legacy {
		augment = `,"task":{"ttl":60000}`
	}
	created := okResult(t, "create", call("tools/call", `"name":"job","arguments":{}`+augment))
	var id string
	if legacy {
		task, _ := created["task"].(map[string]any)
		id, _ = task["taskId"].(string)
		if id == "" || task["status"] != "working" || task["ttl"] == nil || created["resultType"] != nil {
			t.Fatalf("2025-11-25 CreateTaskResult: %v", created)
		}
	} else {
		id, _ = created["taskId"].(string)
		if id == "" || created["resultType"] != "task" || created["status"] != "working" || created["ttlMs"] == nil {
			t.Fatalf("SEP-2663 CreateTaskResult: %v", created)
		}
	}
	params := `"taskId":"` + id + `"`
	var got map[string]any
	for i := 0; ; i++ {
		got = okResult(t, "tasks/get", call("tasks/get", params))
		if got["taskId"] != id {
			t.Fatalf("tasks/get: %v", got)
		}
		if got["status"] != "working" {
			break
		}
		if i == 5 {
			t.Fatalf("task still working after %d polls", i+1)
		}
	}
	if got["status"] != "completed" {
		t.Fatalf("tasks/get: %v, want completed", got)
	}
	want := "done …" + id
	if legacy {
		if got["result"] != nil || got["ttl"] == nil || got["ttlMs"] != nil {
			t.Errorf("2025-11-25 tasks/get: %v, want a Task without its result", got)
		}
		got = okResult(t, "tasks/result", call("tasks/result", params))
		meta, _ := got["_meta"].(map[string]any)
		related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
		if related["taskId"] != id {
			t.Errorf("tasks/result: %v, want the related-task _meta", got)
		}
	} else {
		if got["resultType"] != "complete" || got["ttlMs"] == nil || got["ttl"] != nil {
			t.Errorf("SEP-2663 tasks/get: %v", got)
		}
		got, _ = got["result"].(map[string]any)
	}
	// The server says "done <its own id>"; the client may know the task
	// under a longer id (a bridge's replica prefix).
	content, _ := got["content"].([]any)
	var text string
	if len(content) > 0 {
		first, _ := content[0].(map[string]any)
		text, _ = first["text"].(string)
	}
	if inner, ok := strings.CutPrefix(text, "done "); len(content) != 1 || !ok || inner == "" || !strings.HasSuffix(id, inner) {
		t.Errorf("task result: %v, want %q", got, want)
	}

	// Another task, cancelled.
	created = okResult(t, "create another", call("tools/call", `"name":"slow","arguments":{}`+augment))
	if legacy {
		id, _ = created["task"].(map[string]any)["taskId"].(string)
	} else {
		id, _ = created["taskId"].(string)
	}
	params = `"taskId":"` + id + `"`
	cancelled := okResult(t, "tasks/cancel", call("tasks/cancel", params))
	if legacy {
		// 2025-11-25: "MUST transition the task to cancelled status before
		// sending the response", which carries the task.
		if cancelled["taskId"] != id || cancelled["status"] != "cancelled" {
			t.Errorf("2025-11-25 tasks/cancel: %v", cancelled)
		}
	} else if len(cancelled) != 1 || cancelled["resultType"] != "complete" {
		// SEP-2663: an empty acknowledgement.
		t.Errorf("SEP-2663 tasks/cancel: %v, want an empty ack", cancelled)
	}
	if got := okResult(t, "tasks/get after cancel", call("tasks/get", params)); got["status"] != "cancelled" {
		t.Errorf("tasks/get after cancel: %v", got)
	}
}

func okResult(t testing.TB, what string, m map[string]any) map[string]any {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if r == nil {
		t.Fatalf("%s: %v, want a result", what, m)
	}
	return r
}
