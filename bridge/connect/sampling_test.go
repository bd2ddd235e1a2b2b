package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Sampling with tools (SEP-1577) through connect's translations, both
// ways. The Go SDK's 2026-07-28 client reads an input round's sampling
// request into CreateMessageParams, which has no tools, so the 2026-07-28
// side is a raw peer here.

// A 2026-07-28 host (raw) in front of a legacy Go SDK remote: the remote's
// tool-enabled sampling request reaches a host that declared
// sampling.tools with tools and toolChoice intact, and the tool_use answer
// reaches the remote; a host that declared plain sampling is not asked.
func TestSamplingWithToolsModernHostLegacyRemote(t *testing.T) {
	u := &urlRemote{}
	server := u.server()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	env := func(caps string) string {
		return `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample-tools","arguments":{},"_meta":{` + env(`{"sampling":{"tools":{}}}`) + `}}}`)
	ir, _ := h.response("1", 20*time.Second)
	res, _ := ir["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	params, _ := dig(res, "inputRequests", "input-1", "params").(map[string]any)
	if res["resultType"] != "input_required" || state == "" || params == nil {
		t.Fatalf("first round: %v", ir)
	}
	if tools, _ := params["tools"].([]any); len(tools) != 1 || dig(params, "toolChoice", "mode") != "required" {
		t.Fatalf("the sampling request lost its tools: %v", params)
	}
	answer := `{"role":"assistant","model":"m","stopReason":"toolUse","content":[{"type":"tool_use","id":"tu-1","name":"get_weather","input":{"city":"Paris"}}]}`
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample-tools","arguments":{},"inputResponses":{"input-1":%s},"requestState":%q,"_meta":{%s}}}`, answer, state, env(`{"sampling":{"tools":{}}}`)))
	final, _ := h.response("2", 20*time.Second)
	if got := jsonText(final["result"]); !strings.Contains(got, `stop: toolUse tool_use tu-1 get_weather {\"city\":\"Paris\"}`) {
		t.Fatalf("the remote did not get the tool_use answer: %s", got)
	}

	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sample-tools","arguments":{},"_meta":{` + env(`{"sampling":{}}`) + `}}}`)
	plain, _ := h.response("3", 20*time.Second)
	if got := jsonText(plain["result"]); dig(plain, "result", "resultType") != "complete" || !strings.Contains(got, "error: ") {
		t.Errorf("a host without sampling.tools was asked, or the remote got no error: %v", plain)
	}
}

// samplingModern is a hand-rolled stateless 2026-07-28 remote whose
// tools/call asks for a tool-enabled sampling/createMessage in an input
// round and returns the answer it gets on the retry.
func samplingModern(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	var m wire.Message
	if r.Method != http.MethodPost || wire.Parse(body, &m) != nil {
		http.Error(w, "POST a JSON-RPC message", http.StatusBadRequest)
		return
	}
	if !m.IsModern() {
		jsonErr(w, http.StatusBadRequest, m.IDBytes(), wire.CodeUnsupportedVersion, "Unsupported protocol version", `{"supported":["2026-07-28"]}`)
		return
	}
	switch m.Method {
	case "server/discover":
		answer(w, r, body, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-sampling","version":"1"}}}`)
	case "tools/call":
		var p struct {
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		}
		json.Unmarshal(m.Bytes(m.Params), &p)
		if a, ok := p.InputResponses["s"]; ok {
			t, _ := json.Marshal("answer: " + string(a))
			answer(w, r, body, `{"resultType":"complete","content":[{"type":"text","text":`+string(t)+`}]}`)
			return
		}
		answer(w, r, body, `{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{"maxTokens":100,"messages":[{"role":"user","content":{"type":"text","text":"weather in Paris?"}}],"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"required"}}}},"requestState":"s1"}`)
	default:
		jsonErr(w, http.StatusNotFound, m.IDBytes(), wire.CodeMethodNotFound, "Method not found", "")
	}
}

// A 2025-11-25 host (the Go SDK client) in front of a 2026-07-28 remote:
// the remote's tool-enabled sampling request reaches the host's
// CreateMessageWithToolsHandler with tools and toolChoice, and the
// tool_use answer reaches the remote; a host that declared plain sampling
// is not sent it.
func TestSamplingWithToolsLegacyHostModernRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(samplingModern))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var sampled *mcp.CreateMessageWithToolsParams
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "2025-11-25", &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			mu.Lock()
			sampled = req.Params
			mu.Unlock()
			return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", StopReason: "toolUse",
				Content: []mcp.Content{&mcp.ToolUseContent{ID: "tu-1", Name: "get_weather", Input: map[string]any{"city": "Paris"}}}}, nil
		},
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample-tools", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(textOf(res), `"type":"tool_use"`) || !strings.Contains(textOf(res), `"name":"get_weather"`) {
		t.Fatalf("sample-tools = %v, %v", res, err)
	}
	mu.Lock()
	if sampled == nil || len(sampled.Tools) != 1 || sampled.Tools[0].Name != "get_weather" || sampled.ToolChoice == nil || sampled.ToolChoice.Mode != "required" {
		t.Errorf("the host's sampling request: %+v", sampled)
	}
	mu.Unlock()

	plain := connectThroughBridge(t, ctx, srv.URL, nil, "2025-11-25", &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			t.Error("a host without sampling.tools was sent a tool-enabled sampling request")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "no"}}, nil
		},
	})
	if res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "sample-tools", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("sample-tools without sampling.tools = %v", textOf(res))
	}
}
