package serve

import (
	"encoding/json"
	"fmt"
	"testing"
)

// tasksMeta is a 2026-07-28 request's _meta declaring the Tasks extension.
const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}}`

// taskEraCase is one pairing of client era and child era.
type taskEraCase struct {
	name      string
	child     ChildProtocol
	legacy    bool // the client speaks 2025-11-25 (a session)
	crossEras bool
}

var taskEraCases = []taskEraCase{
	{name: "modern client, modern child", child: ChildModern},
	{name: "modern client, legacy child", child: ChildLegacy, crossEras: true},
	{name: "legacy client, legacy child", child: ChildLegacy, legacy: true},
	{name: "legacy client, modern child", child: ChildModern, legacy: true, crossEras: true},
}

// runTaskLifecycle drives acceptance item 1 of issue #24 with client c: a
// task created with tools/call "job" is polled with tasks/get to its
// result (a 2025-11-25 client then reads it with tasks/result); another,
// "slow", is cancelled and reads back cancelled.
func runTaskLifecycle(t *testing.T, c *taskClient, legacy bool) {
	t.Helper()
	augment := ""
	if legacy {
		augment = `,"task":{"ttl":60000}`
	}
	created := okResult(t, "create", c.call("tools/call", `"name":"job","arguments":{}`+augment))
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
		got = okResult(t, "tasks/get", c.call("tasks/get", params))
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
	want := "done " + id
	if legacy {
		if got["result"] != nil || got["ttl"] == nil || got["ttlMs"] != nil {
			t.Errorf("2025-11-25 tasks/get: %v, want a Task without its result", got)
		}
		got = okResult(t, "tasks/result", c.call("tasks/result", params))
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
	if text := fmt.Sprint(got["content"]); text != "[map[text:"+want+" type:text]]" {
		t.Errorf("task result: %v, want %q", got, want)
	}

	// Another task, cancelled.
	created = okResult(t, "create another", c.call("tools/call", `"name":"slow","arguments":{}`+augment))
	if legacy {
		id, _ = created["task"].(map[string]any)["taskId"].(string)
	} else {
		id, _ = created["taskId"].(string)
	}
	params = `"taskId":"` + id + `"`
	cancelled := okResult(t, "tasks/cancel", c.call("tasks/cancel", params))
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
	if got := okResult(t, "tasks/get after cancel", c.call("tasks/get", params)); got["status"] != "cancelled" {
		t.Errorf("tasks/get after cancel: %v", got)
	}
}

// TestTasksAcrossEras: issue #24 acceptance item 1 through serve — each
// era's client runs the task lifecycle in its own generation of tasks,
// against a child of the same era (passed through) and of the other
// (translated by bridge/translate), and the handshake offers tasks in each
// pairing.
func TestTasksAcrossEras(t *testing.T) {
	for _, tc := range taskEraCases {
		t.Run(tc.name, func(t *testing.T) {
			b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: tc.child, SessionMode: SessionShared, AuthTokens: []string{"token-a"}})
			c := &taskClient{t: t, url: b.URL, token: "token-a", meta: tasksMeta}
			if tc.legacy {
				c.sid = legacyInit(t, b.URL, "Bearer token-a", "2025-11-25")
				caps := legacyCapabilities(t, b.URL)
				tasks, _ := caps["tasks"].(map[string]any)
				if tasks["requests"] == nil || tasks["cancel"] == nil {
					t.Errorf("initialize capabilities: %v, want tasks", caps)
				}
				if tc.crossEras && tasks["list"] != nil {
					t.Errorf("initialize capabilities: %v, want no tasks.list (the extension has none)", caps)
				}
				tools := okResult(t, "tools/list", c.call("tools/list", ""))
				if s := toolTaskSupport(tools, "job"); s != "optional" {
					t.Errorf("tools/list: job's taskSupport %q, want optional", s)
				}
			} else {
				disc := okResult(t, "server/discover", c.call("server/discover", ""))
				caps, _ := disc["capabilities"].(map[string]any)
				ext, _ := caps["extensions"].(map[string]any)
				if ext["io.modelcontextprotocol/tasks"] == nil || caps["tasks"] != nil {
					t.Errorf("discover capabilities: %v, want the Tasks extension and no legacy tasks", caps)
				}
			}
			runTaskLifecycle(t, c, tc.legacy)
			if tc.crossEras {
				// The other generation's methods are not the client's.
				method := "tasks/result"
				if tc.legacy {
					method = "tasks/list"
				}
				if e, _ := c.call(method, "")["error"].(map[string]any); e == nil || e["code"] != float64(-32601) {
					t.Errorf("%s across eras: %v, want -32601", method, e)
				}
			}
		})
	}
}

// A 2026-07-28 client that does not declare the extension gets no task
// from a legacy child ("A server MUST NOT return CreateTaskResult to a
// client that did not include the extension capability on its request"),
// even when it sends a 2025-11-25 task member.
func TestTasksAcrossErasUndeclared(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildLegacy, AuthTokens: []string{"token-a"}})
	c := &taskClient{t: t, url: b.URL, token: "token-a"}
	for _, params := range []string{`"name":"job","arguments":{}`, `"name":"job","arguments":{},"task":{}`} {
		r := okResult(t, "tools/call", c.call("tools/call", params))
		if r["resultType"] != "complete" || fmt.Sprint(r["content"]) != "[map[text:done now type:text]]" {
			t.Errorf("tools/call {%s}: %v, want the result at once", params, r)
		}
	}
}

func toolTaskSupport(list map[string]any, name string) string {
	tools, _ := list["tools"].([]any)
	for _, tl := range tools {
		tool, _ := tl.(map[string]any)
		if tool["name"] == name {
			ex, _ := tool["execution"].(map[string]any)
			s, _ := ex["taskSupport"].(string)
			return s
		}
	}
	return ""
}

// legacyCapabilities opens a session and returns its initialize result's
// capabilities.
func legacyCapabilities(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, body := rawPost(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, map[string]string{"Authorization": "Bearer token-a"})
	for _, m := range messages(t, resp, body) {
		var r struct {
			Result struct {
				Capabilities map[string]any `json:"capabilities"`
			} `json:"result"`
		}
		b, _ := json.Marshal(m)
		json.Unmarshal(b, &r)
		return r.Result.Capabilities
	}
	return nil
}
