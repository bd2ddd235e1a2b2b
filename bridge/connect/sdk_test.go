package connect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKServer builds the Go SDK test server: echo, progress, a tool that
// asks the client to sample, and one that changes the tool list.
func goSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-remote", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
	})
	// sample_progress asks for sampling mid-call, then reports progress:
	// the progress comes after an input round.
	mcp.AddTool(s, &mcp.Tool{Name: "sample_progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if _, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
		}); err != nil {
			return nil, nil, err
		}
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("extra_%d", time.Now().UnixNano())}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
	})
	return s
}

// connectThroughBridge starts `mcp-bridge connect [flags] url` as a Go SDK
// client's stdio server.
func connectThroughBridge(t *testing.T, ctx context.Context, url string, flags []string, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	args := append(append([]string{"connect", "--log-level", "debug"}, flags...), url)
	cmd := exec.Command(bridgeBin, args...)
	cmd.Stderr = testmain.TestLog{T: t}
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func clientOptions(c *counter) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { c.add("progress") },
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { c.add("list_changed") },
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.add("sampling")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "hi from the host"}}, nil
		},
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func checkBasics(t *testing.T, ctx context.Context, cs *mcp.ClientSession, c *counter) {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 3 {
		t.Fatalf("ListTools = %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil || textOf(res) != "echo: hello" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	p.SetProgressToken("pt")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 progress notifications", func() bool { return c.get("progress") >= 3 })
	if n := c.get("progress"); n != 3 {
		t.Errorf("%d progress notifications, want 3", n)
	}
}

// checkSampleAndListChanged checks that a sampling request the server makes
// mid-call is answered by the host, and that the tool list change of
// "grow" reaches the host (what names the notification's way there).
func checkSampleAndListChanged(t *testing.T, ctx context.Context, cs *mcp.ClientSession, c *counter, what string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{}})
	if err != nil || textOf(res) != "sampled: hi from the host" {
		t.Fatalf("sample = %v, %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, what, func() bool { return c.get("list_changed") >= 1 })
}

func TestGoSDKStatelessRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "", clientOptions(&c))
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %q, want 2026-07-28", v)
	}
	checkBasics(t, ctx, cs, &c)
}

func TestGoSDKStatefulRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := goSDKServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "2025-11-25", clientOptions(&c))
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", v)
	}
	checkBasics(t, ctx, cs, &c)
	// A session exists on the server side.
	var ids []string
	for ss := range server.Sessions() {
		ids = append(ids, ss.ID())
	}
	if len(ids) != 1 || ids[0] == "" {
		t.Errorf("server sessions %q, want one with an id", ids)
	}
	// The list_changed comes on the GET stream.
	checkSampleAndListChanged(t, ctx, cs, &c, "notifications/tools/list_changed")
}

func TestMCPGoStatefulRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(mcpGoServer())
	t.Cleanup(srv.Close)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL+"/mcp", nil, "2025-11-25", clientOptions(&c))
	checkBasics(t, ctx, cs, &c)
	checkSampleAndListChanged(t, ctx, cs, &c, "notifications/tools/list_changed")
}

// mcpGoServer builds the mcp-go test server (stateful, pinned to 2025
// versions), with the tools of goSDKServer.
func mcpGoServer() http.Handler {
	s := mcpgoserver.NewMCPServer("mcp-go-remote", "1", mcpgoserver.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("progress"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		srv := mcpgoserver.ServerFromContext(ctx)
		for i := range 3 {
			srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1, "total": 3})
		}
		// mcp-go v1.2.1 loses a notification that is still queued when the
		// handler returns (its per-request forwarder takes it off the session
		// channel, then sees the request done and drops it; no event store).
		// Real tools work between their last progress and their result; so
		// does this one, for a moment.
		time.Sleep(20 * time.Millisecond)
		return mcpgo.NewToolResultText("done"), nil
	})
	s.AddTool(mcpgo.NewTool("sample"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := mcpgoserver.ServerFromContext(ctx).RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: mcpgo.CreateMessageParams{
			MaxTokens: 10,
			Messages:  []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.NewTextContent("say hi")}},
		}})
		if err != nil {
			return nil, err
		}
		return mcpgo.NewToolResultText("sampled: " + res.Content.(mcpgo.TextContent).Text), nil
	})
	s.AddTool(mcpgo.NewTool("grow"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		s.AddTool(mcpgo.NewTool(fmt.Sprintf("extra_%d", time.Now().UnixNano())), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(""), nil
		})
		time.Sleep(20 * time.Millisecond) // the list_changed is queued on the session too
		return mcpgo.NewToolResultText("grown"), nil
	})
	s.EnableSampling()
	return mcpgoserver.NewStreamableHTTPServer(s, mcpgoserver.WithStateful(true),
		mcpgoserver.WithStreamableHTTPProtocolVersions("2025-11-25", "2025-06-18", "2025-03-26"))
}
