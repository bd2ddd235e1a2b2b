package serve

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// urlChild is an in-process Go SDK server (Config.Run), pinned to the
// legacy era by the bridge, that needs URL-mode elicitations (SEP-1036)
// and sampling with tools (SEP-1577):
//
//   - connect fails with -32042 URLElicitationRequired until the
//     out-of-band interaction is done (complete), which also sends
//     notifications/elicitation/complete;
//   - ask-url sends elicitation/create in mode "url" mid-call and returns
//     the action;
//   - sample-tools sends sampling/createMessage with tools and toolChoice
//     and returns the tool_use blocks of the answer.
type urlChild struct {
	mu        sync.Mutex
	connected bool
	srv       *mcp.Server
	ss        *mcp.ServerSession
	failures  int // -32042 answers sent
}

const childURL = "https://auth.example.com/connect?session=1"

func (u *urlChild) run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "url-child", Version: "1"}, nil)
	u.mu.Lock()
	u.srv = srv
	u.mu.Unlock()
	mcp.AddTool(srv, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.ss = req.Session
		if !u.connected {
			u.failures++
			return nil, nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: "el-1", URL: childURL, Message: "Connect your account"}})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "connected"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask-url"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", ElicitationID: "el-2", URL: childURL, Message: "Pay here"})
		text := "error: "
		if err != nil {
			text += err.Error()
		} else {
			text = "action: " + res.Action
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "sample-tools"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessageWithTools(ctx, &mcp.CreateMessageWithToolsParams{
			MaxTokens:  100,
			Messages:   []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "weather in Paris?"}}}},
			Tools:      []*mcp.Tool{{Name: "get_weather", InputSchema: map[string]any{"type": "object"}}},
			ToolChoice: &mcp.ToolChoice{Mode: "required"},
		})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}, nil, nil
		}
		text := "stop: " + res.StopReason
		for _, c := range res.Content {
			if tu, ok := c.(*mcp.ToolUseContent); ok {
				b, _ := json.Marshal(tu.Input)
				text += " tool_use " + tu.ID + " " + tu.Name + " " + string(b)
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
}

// complete is the user finishing the out-of-band interaction: the server
// learns it (its own web page) and tells its client.
func (u *urlChild) complete() {
	u.mu.Lock()
	u.connected = true
	ss := u.ss
	u.mu.Unlock()
	ss.NotifyElicitationComplete(context.Background(), &mcp.ElicitationCompleteParams{ElicitationID: "el-1"})
}

func urlCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
}

// Issue #24 acceptance: a URL-mode elicitation from a 2025 child completes
// for a 2026-07-28 client. The child's -32042 reaches the Go SDK client as
// an input round with an elicitation/create in mode "url"; the user
// accepts, opens the URL, completes the interaction out of band (the child
// sends notifications/elicitation/complete); the client's retry waits for
// that and gets the result — one prompt, not a second -32042.
func TestURLElicitationLegacyChildModernClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := &urlChild{}
	b := startBridge(t, Config{Run: u.run, ChildProtocol: ChildLegacy, ChildPer: ChildPerPrincipal}, "unused")
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	cs := connectSDK(t, ctx, b.URL, "", &mcp.ClientOptions{
		Capabilities: urlCaps(),
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			if req.Params.Mode == "url" && req.Params.URL == childURL && strings.Contains(req.Params.Message, "Connect") {
				// The browser: the interaction ends a little after consent.
				time.AfterFunc(100*time.Millisecond, u.complete)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect"})
	if err != nil || toolText(t, res) != "connected" {
		t.Fatalf("connect = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != childURL {
		t.Fatalf("elicitations asked: %+v, want one in mode url for %s", asked, childURL)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.failures != 1 {
		t.Errorf("the child answered -32042 %d times: the retry did not wait for the completion", u.failures)
	}
}

// A declined URL elicitation ends the call with an error (never the
// 2025-only -32042), and a client that did not declare URL-mode
// elicitation gets -32021 naming the capability.
func TestURLElicitationDeclinedOrUndeclared(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := &urlChild{}
	b := startBridge(t, Config{Run: u.run, ChildProtocol: ChildLegacy, ChildPer: ChildPerPrincipal}, "unused")
	cs := connectSDK(t, ctx, b.URL, "", &mcp.ClientOptions{
		Capabilities: urlCaps(),
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect"}); err == nil || !strings.Contains(err.Error(), "declined") {
		t.Errorf("declined: err = %v", err)
	}
	_, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"connect","arguments":{},`+modernMeta+`}}`, modernHeaders("tools/call", "connect"))
	if !strings.Contains(string(body), `"code":-32021`) || !strings.Contains(string(body), `"requiredCapabilities":{"elicitation":{"url":{}}}`) || strings.Contains(string(body), "-32042") {
		t.Errorf("undeclared: %s", body)
	}
}

// A legacy child's elicitation/create in mode "url" reaches a 2026-07-28
// client that declared URL elicitation, in an input round; one that
// declared only form mode is not asked (the bridge declines for it).
func TestURLElicitationRequestLegacyChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := &urlChild{}
	b := startBridge(t, Config{Run: u.run, ChildProtocol: ChildLegacy, ChildPer: ChildPerPrincipal}, "unused")
	var mu sync.Mutex
	var modes []string
	handler := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		modes = append(modes, req.Params.Mode+" "+req.Params.URL)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs := connectSDK(t, ctx, b.URL, "", &mcp.ClientOptions{Capabilities: urlCaps(), ElicitationHandler: handler})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask-url"})
	if err != nil || toolText(t, res) != "action: accept" {
		t.Fatalf("ask-url = %v, %v", res, err)
	}
	formOnly := connectSDK(t, ctx, b.URL, "", &mcp.ClientOptions{
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: handler,
	})
	res, err = formOnly.CallTool(ctx, &mcp.CallToolParams{Name: "ask-url"})
	if err != nil || toolText(t, res) != "action: decline" {
		t.Fatalf("ask-url without elicitation.url = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(modes) != 1 || modes[0] != "url "+childURL {
		t.Errorf("the clients were asked %q, want one URL elicitation", modes)
	}
}

// Legacy sessions sharing one legacy child (--session-mode shared): the
// child's notifications/elicitation/complete "MUST only be sent to the
// client that initiated the elicitation request"; with no way to tell
// which session that was, it goes to none rather than to every session.
func TestURLElicitationCompleteNotBroadcast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := &urlChild{}
	b := startBridge(t, Config{Run: u.run, SessionMode: SessionShared}, "unused")
	var c tokenCounter
	opts := func(name string) *mcp.ClientOptions {
		return &mcp.ClientOptions{
			Capabilities: urlCaps(),
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
			ElicitationCompleteHandler: func(context.Context, *mcp.ElicitationCompleteNotificationRequest) { c.add(name + " complete") },
			ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.add(name + " list_changed") },
		}
	}
	a := connectSDK(t, ctx, b.URL, "2025-11-25", opts("a"))
	connectSDK(t, ctx, b.URL, "2025-11-25", opts("b"))
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "connect"}); err == nil || !strings.Contains(err.Error(), "URL elicitation required") {
		t.Fatalf("a legacy session gets -32042 as it is: %v", err)
	}
	u.complete()
	// A notification every session gets, sent after the completion: once
	// b has it, b would have had the completion too.
	u.mu.Lock()
	mcp.AddTool(u.srv, &mcp.Tool{Name: "later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	u.mu.Unlock()
	waitFor(t, "list_changed on b", func() bool { return c.count("b list_changed") > 0 })
	if n := c.count("b complete"); n != 0 {
		t.Errorf("another session got the elicitation's completion %d times", n)
	}
}
