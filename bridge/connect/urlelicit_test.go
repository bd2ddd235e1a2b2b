package connect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const remoteURL = "https://auth.example.com/connect?session=1"

// urlRemote is a stateful (legacy) Go SDK server needing URL-mode
// elicitations (SEP-1036) and sampling with tools (SEP-1577):
//
//   - connect fails with -32042 until complete (the user finishing the
//     out-of-band interaction), which also sends
//     notifications/elicitation/complete;
//   - sample-tools asks sampling/createMessage with tools and toolChoice
//     and returns the tool_use blocks of the answer.
type urlRemote struct {
	mu        sync.Mutex
	connected bool
	ss        *mcp.ServerSession
	failures  int
}

func (u *urlRemote) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "url-remote", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.ss = req.Session
		if !u.connected {
			u.failures++
			return nil, nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: "el-1", URL: remoteURL, Message: "Connect your account"}})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "connected"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask-url"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", ElicitationID: "el-2", URL: remoteURL, Message: "Pay here"})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "action: " + res.Action}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample-tools"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessageWithTools(ctx, samplingWithTools())
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: toolUses(res)}}}, nil, nil
	})
	return s
}

func (u *urlRemote) complete() {
	u.mu.Lock()
	u.connected = true
	ss := u.ss
	u.mu.Unlock()
	ss.NotifyElicitationComplete(context.Background(), &mcp.ElicitationCompleteParams{ElicitationID: "el-1"})
}

func samplingWithTools() *mcp.CreateMessageWithToolsParams {
	return &mcp.CreateMessageWithToolsParams{
		MaxTokens:  100,
		Messages:   []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "weather in Paris?"}}}},
		Tools:      []*mcp.Tool{{Name: "get_weather", InputSchema: map[string]any{"type": "object"}}},
		ToolChoice: &mcp.ToolChoice{Mode: "required"},
	}
}

// toolUses describes the tool_use blocks of a sampling answer.
func toolUses(res *mcp.CreateMessageWithToolsResult) string {
	text := "stop: " + res.StopReason
	for _, c := range res.Content {
		if tu, ok := c.(*mcp.ToolUseContent); ok {
			b, _ := json.Marshal(tu.Input)
			text += " tool_use " + tu.ID + " " + tu.Name + " " + string(b)
		}
	}
	return text
}

func urlCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
}

// Issue #24 acceptance, through connect: a 2026-07-28 host (the Go SDK
// client) in front of a legacy remote that answers -32042. The host gets
// a URL input round, accepts, the interaction completes out of band (the
// remote says so with notifications/elicitation/complete), and the host's
// retry — held until then — gets the result: one prompt, one -32042.
// A declined prompt ends the call with an error.
func TestURLElicitationModernHostLegacyRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := &urlRemote{}
	server := u.server()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	decline := false
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "", &mcp.ClientOptions{
		Capabilities: urlCaps(),
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params)
			if decline {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if req.Params.Mode == "url" && req.Params.URL == remoteURL {
				time.AfterFunc(100*time.Millisecond, u.complete) // the browser
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect", Arguments: map[string]any{}})
	if err != nil || textOf(res) != "connected" {
		t.Fatalf("connect = %v, %v", res, err)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != remoteURL {
		t.Errorf("elicitations asked: %+v, want one in mode url for %s", asked, remoteURL)
	}
	decline = true
	mu.Unlock()
	u.mu.Lock()
	if u.failures != 1 {
		t.Errorf("the remote answered -32042 %d times: the retry did not wait for the completion", u.failures)
	}
	u.connected = false
	u.mu.Unlock()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "declined") {
		t.Errorf("declined: err = %v", err)
	}
}

// The reverse through connect: a 2025-11-25 host (Go SDK client) in front
// of a stateless 2026-07-28 remote whose tool asks for a URL-mode
// elicitation in an input round. The host gets elicitation/create in mode
// "url" with the elicitationId 2025-11-25 requires, accepts, and the
// bridge's retry completes the call.
func TestURLElicitationLegacyHostModernRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "url-modern", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
	mcp.AddTool(server, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["login"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "connected"}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"login": &mcp.ElicitParams{Mode: "url", URL: remoteURL, Message: "Connect your account"},
		}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "2025-11-25", &mcp.ClientOptions{
		Capabilities: urlCaps(),
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect", Arguments: map[string]any{}})
	if err != nil || textOf(res) != "connected" {
		t.Fatalf("connect = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != remoteURL || asked[0].ElicitationID == "" {
		t.Errorf("elicitations asked: %+v, want one in mode url with an elicitationId", asked)
	}
}

// A legacy remote's elicitation/create in mode "url" mid-call reaches a
// 2026-07-28 host that declared URL elicitation, in an input round; a
// form-only host is not asked (the Go SDK remote, told the host's
// capabilities at initialize, refuses by itself; a request declaring
// other capabilities than the first would be declined by the bridge).
func TestURLElicitationRequestModernHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := (&urlRemote{}).server()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var modes []string
	handler := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		modes = append(modes, req.Params.Mode+" "+req.Params.URL)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	for _, tc := range []struct {
		caps *mcp.ClientCapabilities
		want string
	}{
		{urlCaps(), "action: accept"},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}, "error: "},
	} {
		cs := connectThroughBridge(t, ctx, srv.URL, nil, "", &mcp.ClientOptions{Capabilities: tc.caps, ElicitationHandler: handler})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask-url", Arguments: map[string]any{}})
		if err != nil || !strings.HasPrefix(textOf(res), tc.want) {
			t.Errorf("ask-url = %q, %v; want %s", textOf(res), err, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(modes) != 1 || modes[0] != "url "+remoteURL {
		t.Errorf("the hosts were asked %q, want one URL elicitation", modes)
	}
}

// Each 2026-07-28 request declares its capabilities afresh: a request
// whose clientCapabilities lack elicitation.url is not given a URL
// elicitation even though the legacy session was opened with them — the
// bridge declines for it.
func TestURLElicitationPerRequestCapabilities(t *testing.T) {
	server := (&urlRemote{}).server()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	env := func(caps string) string {
		return `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + env(`{"elicitation":{"form":{},"url":{}}}`) + `}}}`)
	h.response("1", 20*time.Second)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-url","arguments":{},"_meta":{` + env(`{"elicitation":{"form":{}}}`) + `}}}`)
	res, _ := h.response("2", 20*time.Second)
	if dig(res, "result", "resultType") != "complete" || !strings.Contains(jsonText(res["result"]), "action: decline") {
		t.Errorf("a request without elicitation.url: %v", res)
	}
}
