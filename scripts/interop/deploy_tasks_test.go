//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// taskMeta is the _meta of a 2026-07-28 request from a client with the
// Tasks extension (SEP-2663).
const taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"deploy-tasks","version":"1"}}`

// lbTaskCall POSTs one stateless 2026-07-28 request through the balancer,
// with Mcp-Name as SEP-2663 and SEP-2243 ask; it returns the replica that
// answered and the result (nil for an error, given as errMsg).
func lbTaskCall(t *testing.T, url, method, name, params string) (replica string, result map[string]any, errMsg string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,%s}}`, method, params, taskMeta)
	hdr := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
	code, h, raw := lbPost(t, url, body, hdr)
	if code != 200 {
		return h.Get("Mcp-Bridge-Replica"), nil, fmt.Sprintf("status %d: %s", code, raw)
	}
	// A JSON body, or SSE whose last data line is the answer.
	if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		var last string
		for _, l := range strings.Split(raw, "\n") {
			if d, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(d) != "" {
				last = d
			}
		}
		raw = last
	}
	var m struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return h.Get("Mcp-Bridge-Replica"), nil, "unreadable: " + raw
	}
	if m.Result == nil {
		return h.Get("Mcp-Bridge-Replica"), nil, string(m.Error)
	}
	return h.Get("Mcp-Bridge-Replica"), m.Result, ""
}

// Three replicas (each with the tasks child of bridge/internal/taskchild,
// which hands out task-1, task-2, … in every replica alike) behind each
// shipped balancer configuration: tasks created through the balancer land
// on every replica (round robin), and tasks/get of each task, asked
// several times through the balancer with Mcp-Name = taskId, is answered
// by the replica that created it, with that task. Without the routing by
// Mcp-Name, two of three would reach a replica that has no such task (or
// has its own task-1: the ids carry the replica and the child's epoch, so
// that is "not found" too, never another task). Then r1 restarts: its
// old task answers "Task not found" from r1, though the new child hands
// task-1 out again.
func TestDeployTasksReachTheirReplica(t *testing.T) {
	rs := startReplicas(t, []string{env.taskchild})
	for _, k := range balancers {
		t.Run(k.name, func(t *testing.T) {
			lb := k.start(t, rs)
			for _, r := range rs {
				waitRouted(t, lb, r.id)
			}
			creator := map[string]string{} // task id -> replica that created it
			perReplica := map[string]int{}
			for i := 0; i < 4*replicaCount && len(perReplica) < replicaCount; i++ {
				rep, res, e := lbTaskCall(t, lb.URL, "tools/call", "slow", `"name":"slow","arguments":{}`)
				id, _ := res["taskId"].(string)
				if e != "" || res["resultType"] != "task" || id == "" {
					t.Fatalf("tools/call slow through %s: %v %s", k.name, res, e)
				}
				if owner, _, _ := strings.Cut(id, "."); owner != rep {
					t.Errorf("task %s created by %s: its id does not name the replica", id, rep)
				}
				creator[id] = rep
				perReplica[rep]++
			}
			if len(perReplica) < replicaCount {
				t.Fatalf("%s spread the tasks over %v only: the test needs one on every replica", k.name, perReplica)
			}
			t0 := time.Now()
			gets := 0
			for id, want := range creator {
				for range 3 {
					rep, res, e := lbTaskCall(t, lb.URL, "tasks/get", id, `"taskId":"`+id+`"`)
					gets++
					if e != "" || rep != want || res["taskId"] != id || res["status"] != "working" {
						t.Errorf("tasks/get %s (created by %s) through %s: answered by %q: %v %s", id, want, k.name, rep, res, e)
					}
				}
			}
			took := time.Since(t0)

			// r1 restarts: its new child hands task-1 out again, under a
			// new epoch. The old id still reaches r1 and answers "Task not
			// found" — never the new task-1 — and the new one is found.
			r1 := rs[0]
			var old string
			for id, rep := range creator {
				if rep == r1.id {
					old = id
				}
			}
			r1.restart(t)
			waitRouted(t, lb, r1.id)
			var fresh string
			for i := 0; i < 4*replicaCount && fresh == ""; i++ {
				rep, res, e := lbTaskCall(t, lb.URL, "tools/call", "slow", `"name":"slow","arguments":{}`)
				if id, _ := res["taskId"].(string); e == "" && rep == r1.id {
					fresh = id
				}
			}
			if fresh == "" || fresh == old || !strings.HasSuffix(fresh, ".task-1") {
				t.Fatalf("restarted %s's first task %q (before: %q): want its task-1 under a new id", r1.id, fresh, old)
			}
			if rep, res, e := lbTaskCall(t, lb.URL, "tasks/get", old, `"taskId":"`+old+`"`); rep != r1.id || res != nil || !strings.Contains(e, "Task not found") {
				t.Errorf("tasks/get of %s, a task of %s before its restart: from %q %v %s, want Task not found from %s", old, r1.id, rep, res, e, r1.id)
			}
			if rep, res, e := lbTaskCall(t, lb.URL, "tasks/get", fresh, `"taskId":"`+fresh+`"`); rep != r1.id || res["taskId"] != fresh {
				t.Errorf("tasks/get of %s after the restart: from %q %v %s", fresh, rep, res, e)
			}
			t.Logf("%s: %d tasks on %d replicas %v; %d tasks/get each answered by the task's replica in %v; after %s restarted, its old task answers Task not found, its new task-1 is found",
				k.name, len(creator), len(perReplica), perReplica, gets, took.Round(time.Millisecond), r1.id)
		})
	}
}
