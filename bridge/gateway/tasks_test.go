package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// tasksChildEnv makes this test binary the tasks fixture server
// (bridge/internal/taskchild) on stdio.
const tasksChildEnv = "MCP_BRIDGE_GATEWAY_TASKS_CHILD"

func init() {
	if os.Getenv(tasksChildEnv) == "1" {
		os.Exit(taskchild.Run(os.Stdin, os.Stdout, taskchild.Options{}))
	}
}

// wireNames records, of every 2026-07-28 tasks request reaching serve,
// whether it carried Mcp-Name = params.taskId.
type wireNames struct {
	next           http.Handler
	mu             sync.Mutex
	named, misname int
}

func (wn *wireNames) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get(wire.HeaderMethod), "tasks/") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		var m wire.Message
		wire.Parse(body, &m)
		name, err := wire.DecodeHeaderValue(r.Header.Get(wire.HeaderName))
		wn.mu.Lock()
		wn.named++
		if err != nil || name != m.TaskID {
			wn.misname++
		}
		wn.mu.Unlock()
	}
	wn.next.ServeHTTP(w, r)
}

// TestTasksThroughConnectAndServe: issue #24 acceptance item 1 end to end —
// a host of each era, through connect, then serve, to a tasks-capable
// stdio child of each era (same era: passed through; the other: translated
// by serve), runs the task lifecycle in its own generation of tasks; the
// 2026-07-28 tasks requests on the wire between connect and serve carry
// Mcp-Name = taskId.
func TestTasksThroughConnectAndServe(t *testing.T) {
	for _, child := range []serve.ChildProtocol{serve.ChildModern, serve.ChildLegacy} {
		for _, legacyHost := range []bool{false, true} {
			name := fmt.Sprintf("%s child, legacy host %v", child, legacyHost)
			t.Run(name, func(t *testing.T) {
				h, err := serve.New(serve.Config{
					Command: func() *exec.Cmd {
						cmd := exec.Command(os.Args[0], "-test.run=^$")
						cmd.Env = append(os.Environ(), tasksChildEnv+"=1")
						return cmd
					},
					ChildProtocol:  child,
					TerminateDelay: 500 * time.Millisecond,
				})
				if err != nil {
					t.Fatal(err)
				}
				h.Start()
				wn := &wireNames{next: h}
				srv := httptest.NewServer(wn)
				defer func() {
					h.BeginShutdown()
					srv.CloseClientConnections()
					h.Close()
					srv.Close()
				}()
				call := runHost(t, srv.URL+"/mcp")
				if legacyHost {
					init := call("initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}`)
					if r, _ := init["result"].(map[string]any); r == nil {
						t.Fatalf("initialize: %v", init)
					}
				}
				call("tools/list", "")
				taskchild.Lifecycle(t, call, legacyHost)
				wn.mu.Lock()
				defer wn.mu.Unlock()
				if !legacyHost && (wn.named == 0 || wn.misname != 0) {
					t.Errorf("tasks requests on the wire: %d, %d without Mcp-Name = taskId", wn.named, wn.misname)
				}
			})
		}
	}
}

// runHost starts connect to url and returns a host's call: a request
// (with the Tasks extension declared when it is not a legacy host's, which
// initialize makes it) and its response.
func runHost(t *testing.T, url string) func(method, params string) map[string]any {
	b, err := connect.New(connect.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(context.Background(), inR, outW)
		outW.Close()
	}()
	lines := make(chan map[string]any, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			lines <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		<-done
		for range lines {
		}
	})
	legacy := false
	next := 0
	return func(method, params string) map[string]any {
		t.Helper()
		if method == "initialize" {
			legacy = true
		}
		next++
		if !legacy {
			if params != "" {
				params += ","
			}
			params += taskchild.TasksMeta
		}
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`+"\n", next, method, params)
		if method == "initialize" {
			defer fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
		timeout := time.After(20 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("%s: connect ended", method)
				}
				if id, _ := m["id"].(float64); m["method"] == nil && strconv.Itoa(int(id)) == strconv.Itoa(next) {
					return m
				}
			case <-timeout:
				t.Fatalf("%s: no response", method)
				return nil
			}
		}
	}
}
