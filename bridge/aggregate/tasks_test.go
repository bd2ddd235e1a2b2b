package aggregate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
)

// taskServer is a downstream running bridge/internal/taskchild over pipes:
// every one mints task-1, task-2, … so that two of them collide.
func taskServer(name string) Server {
	return Server{Name: name, Dial: func(context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			taskchild.Run(inR, outW, taskchild.Options{Name: name})
			outW.Close()
			io.Copy(io.Discard, inR)
		}()
		return outR, inW, func() error {
			inW.Close()
			<-done
			outR.Close()
			return nil
		}, nil
	}}
}

// call sends a request and returns the answer with its id, passing the
// notifications before it to notes.
func (c *rawClient) call(id int, method, params string, notes *[]map[string]any) map[string]any {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	for {
		m := c.next()
		if got, ok := m["id"].(float64); ok && int(got) == id {
			return m
		}
		if notes != nil {
			*notes = append(*notes, m)
		}
	}
}

func taskIDIn(t *testing.T, what string, m map[string]any) string {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if task, ok := r["task"].(map[string]any); ok {
		r = task
	}
	id, _ := r["taskId"].(string)
	if id == "" {
		t.Fatalf("%s: no task id in %v", what, m)
	}
	return id
}

func taskMissing(t *testing.T, what string, m map[string]any) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) {
		t.Errorf("%s: %v, want error -32602 (a missing task)", what, m)
	}
}

// Through the aggregate: two servers that both mint task-1 get their task
// ids namespaced per server, tasks/get, tasks/result and tasks/cancel reach
// the server that holds the task, tasks/list merges both, a status
// notification names the task as the client knows it, and an id edited
// to name another server's task of the same id reaches nothing.
func TestTasksNamespacedPerServer(t *testing.T) {
	h := newHarness(t, Config{Servers: []Server{taskServer("a"), taskServer("b")}})
	c := h.raw()
	init := c.initialize()
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	if tc, ok := caps["tasks"].(map[string]any); !ok || tc["list"] == nil || tc["cancel"] == nil || tc["requests"] == nil {
		t.Fatalf("tasks capability %v, want list, cancel and requests.tools.call", caps["tasks"])
	}
	create := func(id int, tool string) string {
		return taskIDIn(t, tool, c.call(id, "tools/call", `{"name":"`+tool+`","arguments":{},"task":{"ttl":60000}}`, nil))
	}
	a1, b1, b2 := create(1, "a_slow"), create(2, "b_slow"), create(3, "b_slow")
	if a1 == b1 || !strings.HasPrefix(a1, "a/") || !strings.HasPrefix(b1, "b/") || !strings.HasSuffix(a1, "/task-1") || !strings.HasSuffix(b2, "/task-2") {
		t.Fatalf("task ids %q %q %q: want each namespaced by its server", a1, b1, b2)
	}
	get := func(id int, task string) map[string]any {
		return c.call(id, "tasks/get", `{"taskId":"`+task+`"}`, nil)
	}
	if got := taskIDIn(t, "tasks/get b2", get(4, b2)); got != b2 {
		t.Errorf("tasks/get %s answered for %s", b2, got)
	}
	// Only server a has a task-1 cancelled afterwards: routing by the id.
	var notes []map[string]any
	if got := taskIDIn(t, "tasks/cancel a1", c.call(5, "tasks/cancel", `{"taskId":"`+a1+`"}`, &notes)); got != a1 {
		t.Errorf("tasks/cancel %s answered for %s", a1, got)
	}
	for i, task := range []struct {
		id, status string
	}{{a1, "cancelled"}, {b1, "working"}} {
		m := get(60+i, task.id)
		r, _ := m["result"].(map[string]any)
		if r["status"] != task.status {
			t.Errorf("tasks/get %s: %v, want status %s", task.id, m, task.status)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	for m := c.next(); m["id"] != float64(7); m = c.next() {
		notes = append(notes, m)
	}
	status := false
	for _, n := range notes {
		if n["method"] == "notifications/tasks/status" {
			status = true
			if id := n["params"].(map[string]any)["taskId"]; id != a1 {
				t.Errorf("notifications/tasks/status names %v, want %s", id, a1)
			}
		}
	}
	if !status {
		t.Errorf("no notifications/tasks/status after the cancel: %v", notes)
	}
	res := c.call(8, "tasks/result", `{"taskId":"`+b1+`"}`, nil)["result"].(map[string]any)
	if rel := res["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != b1 {
		t.Errorf("tasks/result related-task %v, want %s", rel, b1)
	}
	list := c.call(9, "tasks/list", `{}`, nil)["result"].(map[string]any)["tasks"].([]any)
	var ids []string
	for _, e := range list {
		ids = append(ids, e.(map[string]any)["taskId"].(string))
	}
	if strings.Join(ids, " ") != strings.Join([]string{a1, b1, b2}, " ") {
		t.Errorf("tasks/list %q, want %q", ids, []string{a1, b1, b2})
	}
	// b's task-1 under a's name, and the server's own id, are no tasks.
	forged := "a/" + strings.TrimPrefix(b1, "b/")
	taskMissing(t, "b's id edited to name server a", get(10, forged))
	taskMissing(t, "a server's own id", get(11, "task-1"))
	taskMissing(t, "an unknown server", get(12, "c/0123456789abcdef/task-1"))
	taskMissing(t, "tasks/cancel of a forged id", c.call(13, "tasks/cancel", `{"taskId":"`+forged+`"}`, nil))
	if r := get(14, a1)["result"].(map[string]any); r["status"] != "cancelled" {
		t.Errorf("a's task changed by the forged requests: %v", r)
	}
}

// With no server that has tasks, the aggregate offers none and answers
// the tasks methods as missing tasks.
func TestTasksCapabilityOnlyWithTaskServers(t *testing.T) {
	p := newPipeServer("plain", nil)
	textTool(p.srv, "p", "echo")
	h := newHarness(t, Config{Servers: []Server{p.server("p")}})
	c := h.raw()
	caps := c.initialize()["result"].(map[string]any)["capabilities"].(map[string]any)
	if _, ok := caps["tasks"]; ok {
		t.Errorf("tasks capability %v offered with no server that has tasks", caps["tasks"])
	}
	taskMissing(t, "tasks/get", c.call(1, "tasks/get", `{"taskId":"p/0123456789abcdef/x"}`, nil))
	if l := c.call(2, "tasks/list", `{}`, nil)["result"].(map[string]any)["tasks"].([]any); len(l) != 0 {
		t.Errorf("tasks/list %v, want none", l)
	}
}

func FuzzTaskOf(f *testing.F) {
	f.Add("a", "a/0123456789abcdef/task-1")
	f.Add("srv", exposeTaskID("srv", "x/y"))
	f.Add("a/b", exposeTaskID("a/b", "c"))
	f.Fuzz(func(t *testing.T, server, s string) {
		id, ok := taskOf(server, s)
		if ok && exposeTaskID(server, id) != s {
			t.Fatalf("%q of %q is %q, which exposes as %q", s, server, id, exposeTaskID(server, id))
		}
	})
}

// The client's answer to a server's request names the task it relates to
// as the client knows it; the server gets its own id back, and an id of
// another server (or a made-up one) as "", no task of its.
func TestTaskIDsBackToTheirServer(t *testing.T) {
	d := &downstream{name: "a"}
	answer := func(id string) string {
		return `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}}`
	}
	for _, c := range []struct{ exposed, want string }{
		{exposeTaskID("a", "task-1"), "task-1"},
		{exposeTaskID("b", "task-1"), ""},
		{"task-1", ""},
	} {
		if got := string(d.ownTasks([]byte(answer(c.exposed)))); got != answer(c.want) {
			t.Errorf("ownTasks(%s) = %s, want %s", c.exposed, got, answer(c.want))
		}
	}
}
