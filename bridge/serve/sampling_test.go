package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampling with tools (SEP-1577) and URL elicitation through serve's
// translations, both ways: a 2026-07-28 client of a legacy child (input
// rounds), and a legacy session in front of a 2026-07-28 child
// (server-to-client requests).

const toolsEnvelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

func envelopeWith(caps string) string { return strings.Replace(toolsEnvelope, "%s", caps, 1) }

// A legacy child's tool-enabled sampling/createMessage reaches a
// 2026-07-28 client that declared sampling.tools with tools and toolChoice
// intact, and its tool_use answer reaches the child; a client that
// declared plain sampling is not sent it (the child gets an error).
func TestSamplingWithToolsLegacyChildModernClient(t *testing.T) {
	u := &urlChild{}
	b := startBridge(t, Config{Run: u.run, ChildProtocol: ChildLegacy, ChildPer: ChildPerPrincipal}, "unused")
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample-tools","arguments":{},` + envelopeWith(`{"sampling":{"tools":{}}}`) + `}}`
	resp, body := rawPost(t, b.URL, call, modernHeaders("tools/call", "sample-tools"))
	msgs := messages(t, resp, body)
	last := msgs[len(msgs)-1]
	res, _ := last["result"].(map[string]any)
	if res == nil || res["resultType"] != "input_required" {
		t.Fatalf("first round: %s", body)
	}
	var key string
	var params map[string]any
	for k, v := range res["inputRequests"].(map[string]any) {
		key, params = k, v.(map[string]any)["params"].(map[string]any)
	}
	tools, _ := params["tools"].([]any)
	choice, _ := params["toolChoice"].(map[string]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "get_weather" || choice["mode"] != "required" {
		t.Fatalf("the sampling request lost its tools: %v", params)
	}
	state, _ := json.Marshal(res["requestState"])
	answer := `{"role":"assistant","model":"m","stopReason":"toolUse","content":[{"type":"tool_use","id":"tu-1","name":"get_weather","input":{"city":"Paris"}}]}`
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample-tools","arguments":{},"inputResponses":{"` + key + `":` + answer + `},"requestState":` + string(state) + `,` + envelopeWith(`{"sampling":{"tools":{}}}`) + `}}`
	resp, body = rawPost(t, b.URL, retry, modernHeaders("tools/call", "sample-tools"))
	msgs = messages(t, resp, body)
	if got := jsonString(msgs[len(msgs)-1]); !strings.Contains(got, `stop: toolUse tool_use tu-1 get_weather {\"city\":\"Paris\"}`) {
		t.Fatalf("the child did not get the tool_use answer: %s", got)
	}

	plain := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sample-tools","arguments":{},` + envelopeWith(`{"sampling":{}}`) + `}}`
	_, body = rawPost(t, b.URL, plain, modernHeaders("tools/call", "sample-tools"))
	if strings.Contains(string(body), "input_required") || !strings.Contains(string(body), "error: ") {
		t.Errorf("a client without sampling.tools was asked, or the child got no error: %s", body)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// modernChild is a hand-rolled 2026-07-28-only stdio server (Config.Run):
// its tools/call "sample-tools" asks, in an input round, for a
// tool-enabled sampling/createMessage, and "connect" for a URL-mode
// elicitation; the retry's answer comes back as the tool's text.
func modernChild(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var mu sync.Mutex
	send := func(id json.RawMessage, result string) {
		mu.Lock()
		defer mu.Unlock()
		stdout.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n"))
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name           string                     `json:"name"`
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "server/discover":
			send(m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-modern-child","version":"1"}}}`)
		case "tools/list":
			send(m.ID, `{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[{"name":"sample-tools","inputSchema":{"type":"object"}},{"name":"connect","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			if a, ok := m.Params.InputResponses["ask"]; ok {
				t, _ := json.Marshal("answer: " + string(a))
				send(m.ID, `{"resultType":"complete","content":[{"type":"text","text":`+string(t)+`}]}`)
				continue
			}
			ask := `{"method":"sampling/createMessage","params":{"maxTokens":100,"messages":[{"role":"user","content":{"type":"text","text":"weather in Paris?"}}],"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"required"}}}`
			if m.Params.Name == "connect" {
				ask = `{"method":"elicitation/create","params":{"mode":"url","url":"` + childURL + `","message":"Connect your account"}}`
			}
			send(m.ID, `{"resultType":"input_required","inputRequests":{"ask":`+ask+`},"requestState":"s1"}`)
		default:
			mu.Lock()
			stdout.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}` + "\n"))
			mu.Unlock()
		}
	}
	return nil
}

// A 2025-11-25 session (the Go SDK client) in front of a 2026-07-28 child:
// the child's tool-enabled sampling request reaches the client's
// CreateMessageWithToolsHandler with tools and toolChoice, and its
// tool_use answer reaches the child; the child's URL-mode elicitation
// reaches the client with the elicitationId 2025-11-25 requires.
func TestSamplingWithToolsAndURLLegacyClientModernChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBridge(t, Config{Run: modernChild}, "unused")
	var mu sync.Mutex
	var sampled *mcp.CreateMessageWithToolsParams
	var elicited *mcp.ElicitParams
	cs := connectSDK(t, ctx, b.URL, "2025-11-25", &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}}, Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			mu.Lock()
			sampled = req.Params
			mu.Unlock()
			return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", StopReason: "toolUse",
				Content: []mcp.Content{&mcp.ToolUseContent{ID: "tu-1", Name: "get_weather", Input: map[string]any{"city": "Paris"}}}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicited = req.Params
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample-tools"})
	if err != nil || !strings.Contains(toolText(t, res), `"type":"tool_use"`) || !strings.Contains(toolText(t, res), `"name":"get_weather"`) {
		t.Fatalf("sample-tools = %v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect"})
	if err != nil || toolText(t, res) != `answer: {"action":"accept"}` {
		t.Fatalf("connect = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sampled == nil || len(sampled.Tools) != 1 || sampled.Tools[0].Name != "get_weather" || sampled.ToolChoice == nil || sampled.ToolChoice.Mode != "required" {
		t.Errorf("the client's sampling request: %+v", sampled)
	}
	if elicited == nil || elicited.Mode != "url" || elicited.URL != childURL || elicited.ElicitationID == "" {
		t.Errorf("the client's URL elicitation: %+v", elicited)
	}
}
