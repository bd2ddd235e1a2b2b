package connect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// taskRemote is the tasks fixture server (bridge/internal/taskchild)
// behind Streamable HTTP, one JSON response per request. It checks the
// routing header of every 2026-07-28 tasks request: SEP-2663 "the client
// MUST set the Mcp-Name header ... to the value of params.taskId".
type taskRemote struct {
	srv taskchild.Server

	mu             sync.Mutex
	named, misname int
	methods        []string
}

func (tr *taskRemote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body := readBody(r)
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	tr.mu.Lock()
	tr.methods = append(tr.methods, m.Method)
	if strings.HasPrefix(r.Header.Get(wire.HeaderMethod), "tasks/") {
		tr.named++
		if name, err := wire.DecodeHeaderValue(r.Header.Get(wire.HeaderName)); err != nil || name != m.TaskID {
			tr.misname++
		}
	}
	tr.mu.Unlock()
	out, _ := tr.srv.Handle(body)
	if m.Kind != wire.KindRequest || len(out) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" {
		w.Header().Set(wire.HeaderSessionID, "tasks-session")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out[len(out)-1]) // the response; notifications before it are the GET stream's
}

// TestTasksAcrossErasConnect: issue #24 acceptance item 1 through connect —
// a host of each era runs the task lifecycle in its own generation of
// tasks against a remote of the same era (passed through) and of the other
// (translated by bridge/translate, as serve does); 2026-07-28 tasks
// requests carry Mcp-Name = taskId on the wire.
func TestTasksAcrossErasConnect(t *testing.T) {
	for _, tc := range []struct {
		name         string
		legacyHost   bool
		remote       Protocol
		modernOnWire bool
	}{
		{"modern host, modern remote", false, ProtocolModern, true},
		{"modern host, legacy remote", false, ProtocolLegacy, false},
		{"legacy host, legacy remote", true, ProtocolLegacy, false},
		{"legacy host, modern remote", true, ProtocolModern, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote := &taskRemote{}
			srv := httptest.NewServer(remote)
			defer srv.Close()
			h := startHost(t, Config{URL: srv.URL, Protocol: tc.remote})
			next := 0
			call := func(method, params string) map[string]any {
				t.Helper()
				next++
				sep := ""
				if params != "" {
					sep = ","
				}
				if !tc.legacyHost {
					params += sep + taskchild.TasksMeta
				}
				h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, next, method, params))
				resp, _ := h.response(strconv.Itoa(next), 10*time.Second)
				return resp
			}
			if tc.legacyHost {
				init := call("initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}`)
				caps, _ := init["result"].(map[string]any)["capabilities"].(map[string]any)
				if tasks, _ := caps["tasks"].(map[string]any); tasks["requests"] == nil || tasks["cancel"] == nil {
					t.Errorf("initialize capabilities: %v, want tasks", caps)
				}
				h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			} else {
				disc := call("server/discover", "")
				caps, _ := disc["result"].(map[string]any)["capabilities"].(map[string]any)
				ext, _ := caps["extensions"].(map[string]any)
				if ext["io.modelcontextprotocol/tasks"] == nil || caps["tasks"] != nil {
					t.Errorf("discover capabilities: %v, want the Tasks extension and no legacy tasks", caps)
				}
			}
			// A host lists the tools first; a 2025-11-25 one learns which
			// may run as tasks, and the bridge which the legacy remote's are.
			call("tools/list", "")
			taskchild.Lifecycle(t, call, tc.legacyHost)
			if !tc.legacyHost && tc.remote == ProtocolLegacy {
				// A tool that runs only as a task, called by a host without
				// the extension: SEP-2663's -32021, not the legacy -32601.
				next++
				h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"must","arguments":{},%s}}`, next, meta))
				resp, _ := h.response(strconv.Itoa(next), 10*time.Second)
				if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != float64(-32021) {
					t.Errorf("must without the extension: %v, want -32021", resp)
				}
			}
			remote.mu.Lock()
			defer remote.mu.Unlock()
			if tc.modernOnWire && (remote.named == 0 || remote.misname != 0) {
				t.Errorf("tasks requests on the wire: %d, %d without Mcp-Name = taskId", remote.named, remote.misname)
			}
		})
	}
}

// TestTasksWithheldAcrossEras: a legacy remote whose tasks cannot all be
// translated (task-augmented tools/call but no tasks/cancel, which the
// extension requires) is offered to a 2026-07-28 host without the Tasks
// extension, and its tools are called without a task — never a
// half-working task.
func TestTasksWithheldAcrossEras(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		switch m.Method {
		case "initialize":
			w.Header().Set(wire.HeaderSessionID, "s")
			answer(w, r, body, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"partial","version":"1"}}`)
		case "tools/list":
			answer(w, r, body, `{"tools":[{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}`)
		case "tools/call":
			mu.Lock()
			calls = append(calls, string(m.Bytes(m.Params)))
			mu.Unlock()
			answer(w, r, body, `{"content":[{"type":"text","text":"done now"}]}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + taskchild.TasksMeta + `}}`)
	disc, _ := h.response("1", 10*time.Second)
	caps, _ := disc["result"].(map[string]any)["capabilities"].(map[string]any)
	if caps["extensions"] != nil || caps["tasks"] != nil {
		t.Errorf("discover capabilities: %v, want no tasks of either generation", caps)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + taskchild.TasksMeta + `}}`)
	h.response("2", 10*time.Second)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"job","arguments":{},` + taskchild.TasksMeta + `}}`)
	resp, _ := h.response("3", 10*time.Second)
	if r, _ := resp["result"].(map[string]any); r["resultType"] != "complete" {
		t.Errorf("tools/call: %v, want the result at once", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || strings.Contains(calls[0], `"task"`) {
		t.Errorf("the remote got %q, want one call without a task", calls)
	}
}
