package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
)

// taskClient is one principal's raw client of a bridge.
type taskClient struct {
	t      *testing.T
	url    string
	token  string
	sid    string // a legacy session's id; "" for 2026-07-28 requests
	meta   string // a 2026-07-28 request's _meta member; "" for modernMeta
	nextID int
}

// call sends a request and returns the response that carries its id.
func (c *taskClient) call(method, params string) map[string]any {
	c.t.Helper()
	c.nextID++
	var hdr map[string]string
	body := ""
	if c.sid == "" {
		name := ""
		var p map[string]any
		json.Unmarshal([]byte("{"+params+"}"), &p)
		for _, k := range []string{"name", "taskId"} {
			if v, ok := p[k].(string); ok {
				name = v
			}
		}
		hdr = modernHeaders(method, name)
		sep := ""
		if params != "" {
			sep = ","
		}
		meta := c.meta
		if meta == "" {
			meta = modernMeta
		}
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s%s}}`, c.nextID, method, params, sep, meta)
	} else {
		hdr = map[string]string{"Mcp-Session-Id": c.sid, "MCP-Protocol-Version": "2025-11-25"}
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, c.nextID, method, params)
	}
	hdr["Authorization"] = "Bearer " + c.token
	resp, raw := rawPost(c.t, c.url, body, hdr)
	for _, m := range messages(c.t, resp, raw) {
		if id, ok := m["id"].(float64); ok && int(id) == c.nextID {
			return m
		}
	}
	c.t.Fatalf("%s: no response (%d): %s", method, resp.StatusCode, raw)
	return nil
}

// notFound asserts the bridge's answer for a task the caller may not see:
// the spec's error for a missing task, the same for every such id.
func notFound(t *testing.T, what string, m map[string]any) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || e["message"] != tasks.ErrTaskNotFound {
		t.Errorf("%s: %v, want -32602 %q", what, m, tasks.ErrTaskNotFound)
	}
}

func okResult(t *testing.T, what string, m map[string]any) map[string]any {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if r == nil {
		t.Fatalf("%s: %v, want a result", what, m)
	}
	return r
}

// TestTasksBoundToPrincipalModern: two principals share one 2026-07-28
// child; B cannot get, update or cancel the task A created, and gets the
// answer a made-up id gets; A can. A restarted child's tasks are unknown,
// also when the new child hands the same id out again: the client knows it
// by another id.
func TestTasksBoundToPrincipalModern(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildModern, AuthTokens: []string{"token-a", "token-b"}})
	a := &taskClient{t: t, url: b.URL, token: "token-a"}
	bb := &taskClient{t: t, url: b.URL, token: "token-b"}

	created := okResult(t, "A creates", a.call("tools/call", `"name":"slow","arguments":{}`))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	taskParams := `"taskId":"` + id + `"`
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := taskParams
		if method == "tasks/update" {
			params += `,"inputResponses":{}`
		}
		notFound(t, "B "+method, bb.call(method, params))
	}
	notFound(t, "B made-up id", bb.call("tasks/get", `"taskId":"task-999"`))
	if r := okResult(t, "A tasks/get", a.call("tasks/get", taskParams)); r["taskId"] != id || r["status"] != "working" {
		t.Errorf("A tasks/get: %v", r)
	}
	okResult(t, "A tasks/update", a.call("tasks/update", taskParams+`,"inputResponses":{}`))
	// Listening to a task is reading it (notifications/tasks carry its
	// result): B's listen reaches the child without A's task id, A's with.
	// The child sees its own ids, without the bridge's prefix; a bare
	// child id from a client is no id of the client's.
	bid, _ := okResult(t, "B creates", bb.call("tools/call", `"name":"slow","arguments":{}`))["taskId"].(string)
	listen := `"notifications":{"taskIds":["` + id + `","` + bid + `","task-1","task-999"]}`
	if r := okResult(t, "B listens", bb.call("subscriptions/listen", listen)); fmt.Sprint(r["taskIds"]) != "[task-2]" {
		t.Errorf("B's listen reached the child with %v, want [task-2]", r["taskIds"])
	}
	if r := okResult(t, "A listens", a.call("subscriptions/listen", listen)); fmt.Sprint(r["taskIds"]) != "[task-1]" {
		t.Errorf("A's listen reached the child with %v, want [task-1]", r["taskIds"])
	}
	notFound(t, "A by the child's own id", a.call("tasks/get", `"taskId":"task-1"`))
	// taskIds in two spellings would be read one way by the bridge and
	// another by the child: refused.
	for _, hostile := range []string{
		`"notifications":{"taskIds":["task-2"],"taskIds":["` + id + `"]}`,
		`"notifications":{"taskIds":["task-2"],"TaskIds":["` + id + `"]}`,
		`"notifications":{"task\u0049ds":["` + id + `"]}`,
	} {
		if m := bb.call("subscriptions/listen", hostile); m["error"] == nil {
			t.Errorf("B's listen %s: %v, want an error", hostile, m)
		}
	}

	okResult(t, "A tasks/cancel", a.call("tasks/cancel", taskParams))
	if r := okResult(t, "A tasks/get after cancel", a.call("tasks/get", taskParams)); r["status"] != "cancelled" {
		t.Errorf("A's cancel did not reach the child: %v", r)
	}

	// The child crashes; its successor counts from task-1 again.
	bb.call("tools/call", `"name":"exit","arguments":{}`)
	var again map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; {
		m := bb.call("tools/call", `"name":"slow","arguments":{}`)
		if r, ok := m["result"].(map[string]any); ok {
			again = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no task after the restart: %v", m)
		}
	}
	// The new child hands task-1 out again; the client knows it by
	// another id (a new epoch), so A's old id is no task at all — not the
	// new child's task-1 — and neither is it for B.
	again2, _ := again["taskId"].(string)
	if again2 == "" || again2 == id || !strings.HasSuffix(again2, ".task-1") {
		t.Fatalf("restarted child's first task %q, want its task-1 under an id other than %s", again2, id)
	}
	notFound(t, "A's task after the child restarted", a.call("tasks/get", taskParams))
	notFound(t, "A's old id asked by B", bb.call("tasks/get", taskParams))
	okResult(t, "B's new task", bb.call("tasks/get", `"taskId":"`+again2+`"`))
}

// TestTasksBoundToPrincipalLegacyShared: 2025-11-25 sessions of two
// principals on one shared child (--session-mode shared): B cannot get,
// fetch the result of, cancel or list A's task; A can, and A's list
// leaves out B's.
func TestTasksBoundToPrincipalLegacyShared(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildLegacy, SessionMode: SessionShared, AuthTokens: []string{"token-a", "token-b"}})
	a := &taskClient{t: t, url: b.URL, token: "token-a"}
	a.sid = legacyInit(t, b.URL, "Bearer token-a", "2025-11-25")
	bb := &taskClient{t: t, url: b.URL, token: "token-b"}
	bb.sid = legacyInit(t, b.URL, "Bearer token-b", "2025-11-25")

	r := okResult(t, "A creates", a.call("tools/call", `"name":"slow","arguments":{},"task":{"ttl":60000}`))
	task, _ := r["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		t.Fatalf("CreateTaskResult: %v", r)
	}
	taskParams := `"taskId":"` + id + `"`
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		notFound(t, "B "+method, bb.call(method, taskParams))
	}
	if l := okResult(t, "B tasks/list", bb.call("tasks/list", "")); len(l["tasks"].([]any)) != 0 {
		t.Errorf("B lists A's task: %v", l)
	}
	okResult(t, "B creates", bb.call("tools/call", `"name":"slow","arguments":{},"task":{}`))

	if r := okResult(t, "A tasks/get", a.call("tasks/get", taskParams)); r["taskId"] != id {
		t.Errorf("A tasks/get: %v", r)
	}
	okResult(t, "A tasks/result", a.call("tasks/result", taskParams))
	l := okResult(t, "A tasks/list", a.call("tasks/list", ""))
	if ts := l["tasks"].([]any); len(ts) != 1 || ts[0].(map[string]any)["taskId"] != id {
		t.Errorf("A's list: %v, want only %s", ts, id)
	}
	// The status notification of A's task goes to A's session alone; the
	// list_changed after it, to both.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	streams := map[*taskClient]chan sseEvent{}
	for _, c := range []*taskClient{a, bb} {
		_, ch := openSSE(t, ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": c.sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + c.token})
		streams[c] = ch
	}
	okResult(t, "A tasks/cancel", a.call("tasks/cancel", taskParams))
	for c, ch := range streams {
		var seen []string
		for ev := range ch {
			var m struct{ Method string }
			json.Unmarshal([]byte(ev.data), &m)
			if m.Method == "notifications/tools/list_changed" {
				break
			}
			if m.Method != "" {
				seen = append(seen, m.Method)
			}
		}
		want := "[]"
		if c == a {
			want = "[notifications/tasks/status]"
		}
		if fmt.Sprint(seen) != want {
			t.Errorf("session of %s got %v before list_changed, want %s", c.token, seen, want)
		}
	}

	// The shared child crashes and is started again (the sessions stay):
	// A's task is gone with it, and says so in the bridge's words, before
	// and after the new child hands the id out again.
	bb.call("tools/call", `"name":"exit","arguments":{}`)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, ok := bb.call("tools/list", "")["result"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("shared child did not come back")
		}
	}
	notFound(t, "A's task after the restart", a.call("tasks/get", taskParams))
	okResult(t, "B creates after the restart", bb.call("tools/call", `"name":"slow","arguments":{},"task":{}`))
	notFound(t, "A's task id, now B's", a.call("tasks/get", taskParams))
}

// TestTaskMcpNameRequired: SEP-2663 §Streamable HTTP: Routing Headers
// makes Mcp-Name = params.taskId a MUST; serve checks it as it checks the
// other request headers (400, -32020), before any task lookup.
func TestTaskMcpNameRequired(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildModern})
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"task-1",` + modernMeta + `}}`
	for _, name := range []string{"", "task-2", "=?base64?!!?="} {
		resp, raw := rawPost(t, b.URL, body, modernHeaders("tasks/get", name))
		if resp.StatusCode != 400 {
			t.Errorf("Mcp-Name %q: status %d %s, want 400", name, resp.StatusCode, raw)
			continue
		}
		if e := messages(t, resp, raw)[0]["error"].(map[string]any); e["code"] != float64(-32020) {
			t.Errorf("Mcp-Name %q: %v, want -32020", name, e)
		}
	}
	resp, raw := rawPost(t, b.URL, body, modernHeaders("tasks/get", "task-1"))
	notFound(t, "matching Mcp-Name, no such task", messages(t, resp, raw)[0])
}

// With a replica id, a task id names the replica that holds the task
// (the prefix a load balancer routes Mcp-Name by, as it does session ids),
// and works as one in every tasks request; the related-task meta of
// tasks/result names it the same way.
func TestTaskIDsCarryReplica(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildLegacy, ReplicaID: "r7"})
	// A 2026-07-28 client gets a task from a legacy child when it declares
	// the extension (tasks_translate.go).
	c := &taskClient{t: t, url: b.URL, meta: taskchild.TasksMeta}
	created := okResult(t, "create", c.call("tools/call", `"name":"slow","arguments":{}`))
	id, _ := created["taskId"].(string)
	if !strings.HasPrefix(id, "r7.") || !strings.HasSuffix(id, ".task-1") {
		t.Fatalf("task id %q, want r7.<epoch>.task-1", id)
	}
	if r := okResult(t, "tasks/get", c.call("tasks/get", `"taskId":"`+id+`"`)); r["taskId"] != id {
		t.Errorf("tasks/get: %v, want task %s", r, id)
	}
	okResult(t, "tasks/cancel", c.call("tasks/cancel", `"taskId":"`+id+`"`))
	notFound(t, "the child's own id", c.call("tasks/get", `"taskId":"task-1"`))
}
