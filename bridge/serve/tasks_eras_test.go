package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
)

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

// TestTasksAcrossEras: issue #24 acceptance item 1 through serve — each
// era's client runs the task lifecycle in its own generation of tasks,
// against a child of the same era (passed through) and of the other
// (translated by bridge/translate), and the handshake offers tasks in each
// pairing.
func TestTasksAcrossEras(t *testing.T) {
	for _, tc := range taskEraCases {
		t.Run(tc.name, func(t *testing.T) {
			b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: tc.child, SessionMode: SessionShared, AuthTokens: []string{"token-a"}})
			c := &taskClient{t: t, url: b.URL, token: "token-a", meta: taskchild.TasksMeta}
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
			taskchild.Lifecycle(t, c.call, tc.legacy)
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

// A tool that runs only as a task (taskSupport "required" at the legacy
// child) is refused to a 2026-07-28 client without the extension the way
// SEP-2663 says — -32021 naming the extension — and made a task for one
// with it.
func TestTasksAcrossErasRequired(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildLegacy, AuthTokens: []string{"token-a"}})
	plain := &taskClient{t: t, url: b.URL, token: "token-a"}
	e, _ := plain.call("tools/call", `"name":"must","arguments":{}`)["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32021) || !strings.Contains(fmt.Sprint(e["data"]), "io.modelcontextprotocol/tasks") {
		t.Errorf("undeclared: %v, want -32021 naming the extension", e)
	}
	declared := &taskClient{t: t, url: b.URL, token: "token-a", meta: taskchild.TasksMeta}
	if r := okResult(t, "declared", declared.call("tools/call", `"name":"must","arguments":{}`)); r["resultType"] != "task" {
		t.Errorf("declared: %v, want a task", r)
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
