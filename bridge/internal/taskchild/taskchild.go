// Package taskchild is an MCP server with tasks in both generations,
// written from the texts (SEP-2663 for 2026-07-28 requests, 2025-11-25
// basic/utilities/tasks otherwise), for the tests of every package that
// carries tasks (serve, connect, the aggregate, the gateway, the deploy
// tests): Run serves it on stdio, Server.Handle answers one message (for a
// test's HTTP handler). It is test machinery: nothing in the binary
// imports it.
//
//   - tools/call "slow" creates a task that stays working: a 2025-11-25
//     CreateTaskResult ({"task":{…}}) when a legacy request has
//     params.task (without, the result comes at once), SEP-2663's
//     ({"resultType":"task",…}) for every 2026-07-28 request, declared or
//     not (the bridge's principal binding must not depend on it). Ids count
//     up (task-1, task-2, …), the guessable kind that makes binding tasks to
//     their creator matter; Options.Prefix goes in front of them (to tell
//     servers apart);
//   - tools/call "job" creates a task that completes on its second
//     tasks/get (a poll sees it working, then done; its result is the text
//     "done <id>"): for a 2026-07-28 request only when the request declares
//     the Tasks extension (else the result comes at once), for a legacy one
//     only when it has params.task. tools/list marks both
//     execution.taskSupport "optional" for legacy clients;
//   - tools/call "must" is "slow" whose legacy taskSupport is "required":
//     a legacy call without params.task gets -32601;
//   - tools/call "exit" asks the caller to end the process (Handle's exit);
//   - tasks/get, tasks/update, tasks/cancel, tasks/result, tasks/list
//     serve every task the server created, whoever asks;
//   - tasks/cancel of a 2025-11-25 client sends notifications/tasks/status
//     for the task, then notifications/tools/list_changed;
//   - tasks/get of a task a 2025-11-25 call with a progress token created
//     sends notifications/progress under that token, then
//     notifications/tools/list_changed;
//   - subscriptions/listen answers at once with the task ids it was asked
//     for (result.taskIds), so a test sees what reached the server.
package taskchild

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

type task struct {
	ID, Status string
	job        bool // completes on its second tasks/get
	polls      int
	token      json.RawMessage // the creating call's progress token (2025-11-25)
}

// Options vary the server.
type Options struct {
	// Prefix goes in front of every task id ("" for task-1, task-2, …).
	Prefix string
	// Name is the serverInfo name; "" means "tasks-child".
	Name string
}

// Server is one server's state: its tasks.
type Server struct {
	Options
	mu    sync.Mutex
	tasks []*task
}

// Handle answers one JSON-RPC message: the messages to send back, in
// order, and whether the process is to exit (tools/call "exit").
func (s *Server) Handle(line []byte) (out [][]byte, exit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	send := func(v any) {
		b, _ := json.Marshal(v)
		out = append(out, b)
	}
	find := func(id string) *task {
		for _, t := range s.tasks {
			if t.ID == id {
				return t
			}
		}
		return nil
	}
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
				Version string          `json:"io.modelcontextprotocol/protocolVersion"`
				Token   json.RawMessage `json:"progressToken"`
				Caps    struct {
					Extensions map[string]any `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return nil, false // notifications
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
		result(map[string]any{"protocolVersion": "2025-11-25", "serverInfo": s.info(),
			"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}})
	case "server/discover":
		result(map[string]any{"supportedVersions": []string{"2026-07-28"}, "serverInfo": s.info(),
			"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}})
	case "ping":
		result(map[string]any{})
	case "tools/list":
		slow := map[string]any{"name": "slow", "inputSchema": map[string]any{"type": "object"}}
		job := map[string]any{"name": "job", "inputSchema": map[string]any{"type": "object"}}
		must := map[string]any{"name": "must", "inputSchema": map[string]any{"type": "object"}}
		if !modern {
			slow["execution"] = map[string]any{"taskSupport": "optional"}
			job["execution"] = map[string]any{"taskSupport": "optional"}
			must["execution"] = map[string]any{"taskSupport": "required"}
		}
		result(map[string]any{"tools": []any{
			slow,
			job,
			must,
			map[string]any{"name": "exit", "inputSchema": map[string]any{"type": "object"}},
		}})
	case "tools/call":
		if m.Params.Name == "exit" {
			return nil, true
		}
		_, declared := m.Params.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"]
		if m.Params.Name == "must" && !modern && len(m.Params.Task) == 0 {
			// 2025-11-25: "Servers MUST return a -32601 (Method not found)
			// error if a client does not attempt to do so".
			fail(-32601, "Method not found: must runs only as a task")
			return out, false
		}
		if (m.Params.Name == "job" && modern && !declared) || (!modern && len(m.Params.Task) == 0) {
			result(map[string]any{"content": []any{map[string]any{"type": "text", "text": "done now"}}})
			return out, false
		}
		t := &task{ID: fmt.Sprintf("%stask-%d", s.Prefix, len(s.tasks)+1), Status: "working", job: m.Params.Name == "job"}
		if !modern {
			t.token = m.Params.Meta.Token
		}
		s.tasks = append(s.tasks, t)
		if len(m.Params.Task) > 0 && !modern {
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
			return out, false
		}
		done := map[string]any{"content": []any{map[string]any{"type": "text", "text": "done " + t.ID}}}
		switch m.Method {
		case "tasks/get":
			if t.token != nil {
				// "The progressToken provided in the initial request
				// remains valid throughout the task lifetime"; then a
				// server-wide notification every session gets.
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": t.token, "progress": t.polls + 1}})
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
			}
			if t.job && t.Status == "working" {
				if t.polls++; t.polls >= 2 {
					t.Status = "completed"
				}
			}
			r := shape(t)
			if modern && t.Status == "completed" {
				r["result"] = done
			}
			result(r)
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
			if t.job && t.Status != "completed" {
				fail(-32603, "test child: a job's result is asked for before it is done")
				return out, false
			}
			done["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.ID}}
			result(done)
		}
	case "subscriptions/listen":
		result(map[string]any{"taskIds": m.Params.Notif.TaskIDs})
	case "tasks/list":
		list := []any{}
		for _, t := range s.tasks {
			list = append(list, shape(t))
		}
		result(map[string]any{"tasks": list})
	default:
		fail(-32601, "Method not found")
	}
	return out, false
}

func (s *Server) info() map[string]any {
	name := s.Name
	if name == "" {
		name = "tasks-child"
	}
	return map[string]any{"name": name, "version": "1"}
}

// Run serves one Server on a stdio pair, a JSON-RPC message a line, until
// in ends (0) or tools/call "exit" (3): the loop of a test binary started
// as a stdio child.
func Run(in io.Reader, out io.Writer, o Options) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(out)
	srv := Server{Options: o}
	for sc.Scan() {
		msgs, exit := srv.Handle(sc.Bytes())
		if exit {
			return 3
		}
		for _, m := range msgs {
			w.Write(append(m, '\n'))
		}
		w.Flush()
	}
	return 0
}
