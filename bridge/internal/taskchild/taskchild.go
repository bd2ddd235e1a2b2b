// Package taskchild is a stdio MCP server with tasks in both generations,
// written from the texts (SEP-2663 for 2026-07-28 requests, 2025-11-25
// basic/utilities/tasks otherwise), for the tests of every package that
// carries tasks (serve, the aggregate, the deploy tests). It is test
// machinery: nothing in the binary imports it.
//
//   - tools/call "slow" creates a task: a 2025-11-25 CreateTaskResult
//     ({"task":{…}}) when the request has params.task, else SEP-2663's
//     ({"resultType":"task",…}). Ids count up (task-1, task-2, …), the
//     guessable kind that makes binding tasks to their creator matter;
//     Options.Prefix goes in front of them (to tell servers apart);
//   - tools/call "exit" ends the process (a crash, for restarts);
//   - tasks/get, tasks/update, tasks/cancel, tasks/result, tasks/list
//     serve every task the process created, whoever asks: the child
//     cannot tell the bridge's clients apart;
//   - tasks/cancel of a 2025-11-25 client sends notifications/tasks/status
//     for the task, then notifications/tools/list_changed;
//   - subscriptions/listen answers at once with the task ids it was asked
//     for (result.taskIds), so a test sees what reached the child.
package taskchild

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Options vary the server.
type Options struct {
	// Prefix goes in front of every task id ("" for task-1, task-2, …).
	Prefix string
	// Name is the serverInfo name; "" means "tasks-child".
	Name string
}

// Run serves in until it ends, writing to out; it returns the exit code
// (3 after tools/call "exit").
func Run(in io.Reader, out io.Writer, o Options) int {
	if o.Name == "" {
		o.Name = "tasks-child"
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(out)
	send := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		w.Flush()
	}
	type task struct {
		ID, Status string
	}
	var tasks []*task
	find := func(id string) *task {
		for _, t := range tasks {
			if t.ID == id {
				return t
			}
		}
		return nil
	}
	info := map[string]any{"name": o.Name, "version": "1"}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name   string          `json:"name"`
				TaskID string          `json:"taskId"`
				Task   json.RawMessage `json:"task"`
				Notif  struct {
					TaskIDs []string `json:"taskIds"`
				} `json:"notifications"`
				Meta struct {
					Version string `json:"io.modelcontextprotocol/protocolVersion"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // notifications
		}
		modern := m.Params.Meta.Version != ""
		result := func(r map[string]any) {
			if modern {
				r["resultType"] = "complete"
			}
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": r})
		}
		fail := func(code int, msg string) {
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": code, "message": msg}})
		}
		shape := func(t *task) map[string]any {
			r := map[string]any{"taskId": t.ID, "status": t.Status, "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}
			if modern {
				r["ttlMs"], r["pollIntervalMs"] = 60000, 100
			} else {
				r["ttl"], r["pollInterval"] = 60000, 100
			}
			return r
		}
		switch m.Method {
		case "initialize":
			result(map[string]any{"protocolVersion": "2025-11-25", "serverInfo": info,
				"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}})
		case "server/discover":
			result(map[string]any{"supportedVersions": []string{"2026-07-28"}, "serverInfo": info,
				"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}})
		case "ping":
			result(map[string]any{})
		case "tools/list":
			result(map[string]any{"tools": []any{
				map[string]any{"name": "slow", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "exit", "inputSchema": map[string]any{"type": "object"}},
			}})
		case "tools/call":
			if m.Params.Name == "exit" {
				return 3
			}
			t := &task{ID: fmt.Sprintf("%stask-%d", o.Prefix, len(tasks)+1), Status: "working"}
			tasks = append(tasks, t)
			if len(m.Params.Task) > 0 {
				result(map[string]any{"task": shape(t)})
			} else {
				r := shape(t)
				r["resultType"] = "task"
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": r})
			}
		case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result":
			t := find(m.Params.TaskID)
			if t == nil {
				fail(-32602, "Failed to retrieve task: Task not found")
				continue
			}
			switch m.Method {
			case "tasks/get":
				result(shape(t))
			case "tasks/update":
				result(map[string]any{})
			case "tasks/cancel":
				t.Status = "cancelled"
				if !modern {
					// Told to whoever listens, then a server-wide
					// notification every session gets after it.
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": shape(t)})
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				}
				if modern {
					result(map[string]any{})
				} else {
					result(shape(t))
				}
			case "tasks/result":
				result(map[string]any{"content": []any{map[string]any{"type": "text", "text": "done " + t.ID}},
					"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.ID}}})
			}
		case "subscriptions/listen":
			result(map[string]any{"taskIds": m.Params.Notif.TaskIDs})
		case "tasks/list":
			list := []any{}
			for _, t := range tasks {
				list = append(list, shape(t))
			}
			result(map[string]any{"tasks": list})
		default:
			fail(-32601, "Method not found")
		}
	}
	return 0
}
