package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
)

// testChildEnv selects the test binary's stdio child mode (see TestMain).
const testChildEnv = "SERVE_TEST_CHILD"

// testChild returns a command that runs this test binary as a tiny legacy
// (2025) stdio MCP server with the tools the isolation tests need:
//
//   - env: the process environment, one variable per line;
//   - get-roots: the client's roots, asked for once per connection with
//     roots/list and cached, as 2025-era servers do (server-everything);
//   - ask-roots: asks roots/list every time, offered or not (a server that
//     ignores the negotiated capabilities), and returns the answer;
//   - progress-wait: sends one progress notification and never answers;
//   - hold: answers once release is called; release answers every held
//     call and itself;
//   - big: answers with a text of arguments.size bytes, its members in
//     the order the TypeScript SDK writes them (result, jsonrpc, id) when
//     arguments.order is "ts", else id first as Go and Python SDKs do, or
//     (order "hidden") with the id between two halves of the result;
//   - big-ask: asks the client roots/list with params of arguments.size
//     bytes and returns what it was answered;
//   - ask-progress: asks roots/list, and once answered reports progress
//     under the call's progress token (the first round's: a 2025 server
//     knows no other) before it returns the answer.
func testChild(extraEnv ...string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), testChildEnv+"=legacy"), extraEnv...)
		return cmd
	}
}

// runTestChild is the child's main loop: one connection on stdin/stdout.
func runTestChild() int {
	if os.Getenv(testChildEnv) == "usage" { // started with wrong arguments
		fmt.Fprintln(os.Stderr, "usage: test-server --root DIR")
		return 2
	}
	if os.Getenv(testChildEnv) == "refuse" { // up, answering every request with an error
		return refuseAll()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	text := func(id json.RawMessage, s string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": s}}}})
	}
	type waiter struct {
		call     json.RawMessage
		cache    bool
		progress json.RawMessage // report progress under it before answering
	}
	var (
		rootsCap bool
		cached   string
		asks     int
		held     []json.RawMessage
		waiting  = map[string]waiter{}
	)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
				Name            string                     `json:"name"`
				Arguments       struct {
					Size  int    `json:"size"`
					Order string `json:"order"`
				} `json:"arguments"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		if m.Method == "" && m.ID != nil { // a response to one of our asks
			w, ok := waiting[string(m.ID)]
			if !ok {
				continue
			}
			delete(waiting, string(m.ID))
			answer := string(m.Result)
			if m.Error != nil {
				answer = "error: " + string(m.Error)
			}
			if w.cache && m.Error == nil {
				cached = answer
			}
			if w.progress != nil {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
					"progressToken": w.progress, "progress": 1}})
			}
			text(w.call, answer)
			continue
		}
		if m.ID == nil {
			continue // a notification
		}
		switch m.Method {
		case "initialize":
			v := m.Params.ProtocolVersion
			if !translate.IsLegacy(v) {
				v = "2025-06-18"
			}
			_, rootsCap = m.Params.Capabilities["roots"]
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
				"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "serve-test-child", "version": "1"}}})
		case "ping":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		case "tools/list":
			var tools []any
			for _, n := range []string{"env", "get-roots", "ask-roots", "progress-wait", "hold", "release", "big", "big-ask", "ask-progress"} {
				tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
			}
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": tools}})
		case "tools/call":
			switch m.Params.Name {
			case "env":
				text(m.ID, strings.Join(os.Environ(), "\n"))
			case "progress-wait":
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
					"progressToken": m.Params.Meta.ProgressToken, "progress": 1}})
			case "hold":
				held = append(held, m.ID)
			case "big":
				result := `{"content":[{"type":"text","text":"` + strings.Repeat("x", m.Params.Arguments.Size) + `"}]}`
				switch m.Params.Arguments.Order {
				case "ts":
					out.WriteString(`{"result":` + result + `,"jsonrpc":"2.0","id":` + string(m.ID) + "}\n")
				case "hidden":
					out.WriteString(`{"result":` + result + `,"id":` + string(m.ID) + `,"_meta":{"pad":` + result + "}}\n")
				default:
					out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + "}\n")
				}
				out.Flush()
			case "big-ask":
				waiting[`"big-ask"`] = waiter{call: m.ID}
				send(map[string]any{"jsonrpc": "2.0", "id": "big-ask", "method": "roots/list",
					"params": map[string]any{"pad": strings.Repeat("x", m.Params.Arguments.Size)}})
			case "release":
				for _, id := range append(held, m.ID) {
					text(id, "released")
				}
				held = nil
			case "ask-progress":
				asks++
				id := fmt.Sprintf(`"roots-%d"`, asks)
				waiting[id] = waiter{call: m.ID, progress: m.Params.Meta.ProgressToken}
				send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "roots/list"})
			case "get-roots", "ask-roots":
				cache := m.Params.Name == "get-roots"
				switch {
				case cache && cached != "":
					text(m.ID, cached)
				case cache && !rootsCap:
					text(m.ID, "no roots capability")
				default:
					asks++
					id := fmt.Sprintf(`"roots-%d"`, asks)
					waiting[id] = waiter{call: m.ID, cache: cache}
					send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "roots/list"})
				}
			default:
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool"}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
	return 0
}

// refuseAll answers every request with a JSON-RPC error, as a server that
// lacks its configuration does (or a --config remote entry whose remote
// refuses the bridge).
func refuseAll() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"refused: API key not configured"}}`+"\n", m.ID)
	}
	return 0
}
