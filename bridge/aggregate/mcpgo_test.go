package aggregate

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpGoServer is a downstream running an mcp-go stdio server (only one
// per process at a time: mcp-go keeps its stdio session in a global).
func mcpGoServer() Server {
	s := mcpgoserver.NewMCPServer("mcp-go", "1", mcpgoserver.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("mcp-go:echo:" + req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("sample"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := mcpgoserver.ServerFromContext(ctx).RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: mcpgo.CreateMessageParams{
			MaxTokens: 5,
			Messages:  []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.NewTextContent("say hi")}},
		}})
		if err != nil {
			return nil, err
		}
		return mcpgo.NewToolResultText("sampled: " + res.Content.(mcpgo.TextContent).Text), nil
	})
	return Server{Name: "mg", Dial: func(context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			mcpgoserver.NewStdioServer(s).Listen(ctx, inR, outW)
			outW.Close()
		})
		return outR, inW, func() error {
			inW.Close()
			cancel()
			outR.Close()
			wg.Wait()
			return nil
		}, nil
	}}
}

// TestMcpGoPeers: an mcp-go server among the downstreams and an mcp-go
// client upstream, at 2025-06-18.
func TestMcpGoPeers(t *testing.T) {
	alpha, _ := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), mcpGoServer()}})
	ctx := ctxT(t)

	r, w := h.run()
	c := mcpgoclient.NewClient(mcpgotransport.NewIO(r, w, nil))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-client", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "2025-06-18" || res.ServerInfo.Name != "mcp-bridge aggregate" {
		t.Errorf("initialize: %+v", res)
	}
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tools.Tools {
		got = append(got, tl.Name)
	}
	slices.Sort(got)
	if want := []string{"alpha_add", "alpha_echo", "mg_echo", "mg_sample"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	for name, want := range map[string]string{"mg_echo": "mcp-go:echo:hi", "alpha_echo": "alpha:echo:hi"} {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = map[string]any{"text": "hi"}
		out, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if text := out.Content[0].(mcpgo.TextContent).Text; text != want {
			t.Errorf("%s = %q, want %q", name, text, want)
		}
	}
}

// TestMcpGoSamplingRelayed: the mcp-go server's sampling request reaches a
// go-sdk client and its answer comes back.
func TestMcpGoSamplingRelayed(t *testing.T) {
	h := newHarness(t, Config{Servers: []Server{mcpGoServer()}})
	ctx := ctxT(t)
	cs := h.connect(&mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi from go-sdk"}}, nil
	}})
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mg_sample"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, out); got != "sampled: hi from go-sdk" {
		t.Errorf("mg_sample = %q", got)
	}
}
