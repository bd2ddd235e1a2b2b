//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue #24 with a real SDK's tasks: server-everything 2026.8.31 runs on
// the TS SDK v1, whose experimental 2025-11-25 tasks back its
// simulate-research-query tool (taskSupport "required": four stages of a
// second each, then a report). mcp-bridge serve in front of it over stdio;
// a raw 2025-11-25 session runs the task in its own generation (passed
// through), and a raw stateless 2026-07-28 client declaring the Tasks
// extension (SEP-2663) runs it through serve's translation. Both must end
// with the tool's own report, not a bridge-made stand-in.

// tasksRealTopic is what the report names, so that the result is shown to
// be this call's.
const tasksRealTopic = "bridged tasks"

// tasksRealDeadline bounds polling one task: the tool takes about 4 s;
// the machine is loaded.
const tasksRealDeadline = 60 * time.Second

// rpcAnswer returns the JSON-RPC response with the given id from a body
// that is JSON or SSE, or "" when it has none.
func rpcAnswer(body string, id int) map[string]any {
	var cands []string
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		cands = []string{body}
	} else {
		for _, l := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(d) != "" {
				cands = append(cands, d)
			}
		}
	}
	for _, c := range cands {
		var m map[string]any
		if json.Unmarshal([]byte(c), &m) == nil {
			if v, ok := m["id"].(float64); ok && int(v) == id {
				return m
			}
		}
	}
	return nil
}

// rpcClient speaks to serve with one of the two eras: a 2025-11-25 session
// (sid set) or stateless 2026-07-28 with the Tasks extension declared.
type rpcClient struct {
	t      *testing.T
	url    string
	sid    string
	nextID int
	wire   []string // what was sent and answered, for a failure's report
}

func (c *rpcClient) call(method, params string) map[string]any {
	c.t.Helper()
	c.nextID++
	var body string
	var hdr map[string]string
	if c.sid != "" {
		hdr = map[string]string{"Mcp-Session-Id": c.sid, "MCP-Protocol-Version": "2025-11-25"}
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, c.nextID, method, params)
	} else {
		// SEP-2243's headers; SEP-2663: Mcp-Name is the taskId on tasks
		// requests, the tool's name on tools/call.
		var p map[string]any
		json.Unmarshal([]byte("{"+params+"}"), &p)
		name, _ := p["name"].(string)
		if id, ok := p["taskId"].(string); ok {
			name = id
		}
		hdr = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
		sep := ""
		if params != "" {
			sep = ","
		}
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s%s}}`, c.nextID, method, params, sep, taskMeta)
	}
	code, _, raw := lbPost(c.t, c.url, body, hdr)
	c.wire = append(c.wire, "→ "+body, fmt.Sprintf("← %d %s", code, strings.TrimSpace(raw)))
	m := rpcAnswer(raw, c.nextID)
	if m == nil {
		c.t.Fatalf("%s: no response (%d): %s\nwire:\n%s", method, code, raw, strings.Join(c.wire, "\n"))
	}
	return m
}

func (c *rpcClient) result(method, params string) map[string]any {
	c.t.Helper()
	m := c.call(method, params)
	r, _ := m["result"].(map[string]any)
	if r == nil {
		c.t.Fatalf("%s: %v, want a result\nwire:\n%s", method, m, strings.Join(c.wire, "\n"))
	}
	return r
}

// pollTask asks tasks/get until the task leaves working, and returns the
// last answer and how many polls it took.
func (c *rpcClient) pollTask(id string) (map[string]any, int) {
	c.t.Helper()
	deadline := time.Now().Add(tasksRealDeadline)
	for polls := 1; ; polls++ {
		got := c.result("tasks/get", `"taskId":"`+id+`"`)
		if got["taskId"] != id {
			c.t.Fatalf("tasks/get %s: %v", id, got)
		}
		if s := got["status"]; s != "working" {
			return got, polls
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still working after %v", id, tasksRealDeadline)
		}
		time.Sleep(250 * time.Millisecond) // the poll interval: a remote task's state, not ours
	}
}

// researchReport checks a CallToolResult is the tool's own report and
// returns its text.
func researchReport(t *testing.T, res map[string]any, wire []string) string {
	t.Helper()
	content, _ := res["content"].([]any)
	var text string
	if len(content) == 1 {
		first, _ := content[0].(map[string]any)
		text, _ = first["text"].(string)
	}
	if !strings.HasPrefix(text, "# Research Report: "+tasksRealTopic+"\n") || !strings.Contains(text, "Stage 4: Generating report ✓") {
		t.Fatalf("task result %v, want server-everything's research report on %q\nwire:\n%s", res, tasksRealTopic, strings.Join(wire, "\n"))
	}
	return text
}

func TestTasksRealSDK(t *testing.T) {
	b := startBridge(t, serveOpts{Child: serverEverythingStdio()})
	args := `"name":"simulate-research-query","arguments":{"topic":"` + tasksRealTopic + `"}`

	t.Run("2025-11-25 session", func(t *testing.T) {
		t0 := time.Now()
		code, h, raw := lbPost(t, b.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"list":{},"cancel":{}}},"clientInfo":{"name":"tasks-real","version":"1"}}}`, nil)
		sid := h.Get("Mcp-Session-Id")
		init := rpcAnswer(raw, 0)
		if code != 200 || sid == "" || init == nil {
			t.Fatalf("initialize: %d sid %q: %s", code, sid, raw)
		}
		res, _ := init["result"].(map[string]any)
		caps, _ := res["capabilities"].(map[string]any)
		if tasks, _ := caps["tasks"].(map[string]any); tasks["requests"] == nil {
			t.Errorf("initialize: capabilities %v, want the child's tasks", caps)
		}
		sess := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
		if code, _, raw := lbPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess); code != 202 {
			t.Fatalf("notifications/initialized: %d %s", code, raw)
		}
		c := &rpcClient{t: t, url: b.URL, sid: sid}
		created := c.result("tools/call", args+`,"task":{"ttl":60000}`)
		task, _ := created["task"].(map[string]any)
		id, _ := task["taskId"].(string)
		if id == "" || task["status"] != "working" {
			t.Fatalf("tools/call with task: %v, want a CreateTaskResult\nwire:\n%s", created, strings.Join(c.wire, "\n"))
		}
		got, polls := c.pollTask(id)
		if got["status"] != "completed" {
			t.Fatalf("tasks/get: %v, want completed\nwire:\n%s", got, strings.Join(c.wire, "\n"))
		}
		final := c.result("tasks/result", `"taskId":"`+id+`"`)
		researchReport(t, final, c.wire)
		t.Logf("2025-11-25: task %s completed after %d tasks/get; tasks/result carried the report; %v in all", id, polls, time.Since(t0).Round(time.Millisecond))
	})

	t.Run("2026-07-28 stateless", func(t *testing.T) {
		t0 := time.Now()
		c := &rpcClient{t: t, url: b.URL}
		disc := c.result("server/discover", "")
		caps, _ := disc["capabilities"].(map[string]any)
		if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
			t.Errorf("server/discover: capabilities %v, want the Tasks extension (translated from the child's 2025 tasks)", caps)
		}
		created := c.result("tools/call", args)
		id, _ := created["taskId"].(string)
		if id == "" || created["resultType"] != "task" || created["status"] != "working" {
			t.Fatalf("tools/call: %v, want a SEP-2663 CreateTaskResult\nwire:\n%s", created, strings.Join(c.wire, "\n"))
		}
		got, polls := c.pollTask(id)
		if got["status"] != "completed" || got["resultType"] != "complete" {
			t.Fatalf("tasks/get: %v, want completed with its result\nwire:\n%s", got, strings.Join(c.wire, "\n"))
		}
		inner, _ := got["result"].(map[string]any)
		researchReport(t, inner, c.wire)
		t.Logf("2026-07-28: task %s completed after %d tasks/get, the report inside the last; %v in all", id, polls, time.Since(t0).Round(time.Millisecond))
	})
}
