package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTasksThroughAggregate: serve --config --replica-id r9 with two
// servers that both hand out task-1, task-2, … (bridge/internal/taskchild),
// a 2025-11-25 session on the aggregate /mcp: each task id names the
// replica (serve's prefix) and the server (the aggregate's namespace), and
// tasks/get, tasks/cancel and tasks/list reach the server that holds the
// task.
func TestTasksThroughAggregate(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "servers.json")
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": bin["taskchild"]},
		"b": map[string]any{"command": bin["taskchild"]}},
		"mcpBridge": map[string]any{"aggregate": true}})
	if err := os.WriteFile(cfg, file, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--config", cfg, "--replica-id", "r9")
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"

	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tasks-agg","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	if sid == "" {
		t.Fatalf("initialize: %d, no session", resp.StatusCode)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr).Body.Close()
	next := 1
	call := func(method, params string) map[string]any {
		t.Helper()
		next++
		resp := post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, next, method, params), hdr)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["id"] == float64(next) {
				if m["result"] == nil {
					t.Fatalf("%s %s: %s", method, params, line)
				}
				return m["result"].(map[string]any)
			}
		}
		t.Fatalf("%s: no answer in %d %s", method, resp.StatusCode, body)
		return nil
	}
	create := func(tool string) string {
		r := call("tools/call", `{"name":"`+tool+`","arguments":{},"task":{"ttl":60000}}`)
		id, _ := r["task"].(map[string]any)["taskId"].(string)
		return id
	}
	a1, b1, b2 := create("a_slow"), create("b_slow"), create("b_slow")
	for _, c := range []struct{ id, server, task string }{{a1, "a", "task-1"}, {b1, "b", "task-1"}, {b2, "b", "task-2"}} {
		// The server's own endpoint (/servers/<name>/mcp, which the
		// aggregate dials) names the replica and its child's epoch too.
		if !strings.HasPrefix(c.id, "r9.") || !strings.Contains(c.id, "."+c.server+"/") || !strings.HasSuffix(c.id, "."+c.task) {
			t.Errorf("task id %q: want r9.<epoch>.%s/<mac>/r9.<epoch>.%s", c.id, c.server, c.task)
		}
	}
	if r := call("tasks/get", `{"taskId":"`+b2+`"}`); r["taskId"] != b2 || r["status"] != "working" {
		t.Errorf("tasks/get %s: %v", b2, r)
	}
	call("tasks/cancel", `{"taskId":"`+a1+`"}`)
	if r := call("tasks/get", `{"taskId":"`+a1+`"}`); r["status"] != "cancelled" {
		t.Errorf("tasks/get %s after its cancel: %v", a1, r)
	}
	if r := call("tasks/get", `{"taskId":"`+b1+`"}`); r["status"] != "working" {
		t.Errorf("tasks/get %s, the other server's task-1, after a's cancel: %v", b1, r)
	}
	var listed []string
	for _, e := range call("tasks/list", `{}`)["tasks"].([]any) {
		listed = append(listed, e.(map[string]any)["taskId"].(string))
	}
	if strings.Join(listed, " ") != strings.Join([]string{a1, b1, b2}, " ") {
		t.Errorf("tasks/list %q, want %q", listed, []string{a1, b1, b2})
	}
}
