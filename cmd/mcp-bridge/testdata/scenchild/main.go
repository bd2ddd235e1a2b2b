// Command scenchild is the Go SDK server behind the scenario table
// (scenarios_test.go): the same tools in either protocol era, over stdio
// (serve's child) or Streamable HTTP (connect's remote).
//
//	scenchild -era 2025|2026 [-http 127.0.0.1:0]
//
// With -http it prints its /mcp URL on the first line of stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	era := flag.String("era", "2025", "protocol era: 2025 (sessions) or 2026 (stateless)")
	addr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	flag.Parse()
	versions := map[string][]string{
		"2025": {"2025-11-25", "2025-06-18", "2025-03-26"},
		"2026": {"2026-07-28"},
	}[*era]
	if versions == nil {
		fmt.Fprintf(os.Stderr, "scenchild: unknown era %q\n", *era)
		os.Exit(2)
	}
	s := newServer(versions)
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "scenchild:", err)
			os.Exit(1)
		}
		return
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenchild:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", l.Addr())
	// A 2026-07-28 client cancels a call by closing its stream; the SDK
	// ends the handler's context then only when asked to.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *era == "2026", PropagateRequestCancellation: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Fprintln(os.Stderr, "scenchild:", http.Serve(l, mux))
	os.Exit(1)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newServer builds the scenario tools. Input rounds are written once, the
// 2026 way (inputRequests); the SDK turns them into real server→client
// requests for a 2025 session, so the same tool serves both eras.
func newServer(versions []string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "scenchild", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask2"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		el, _ := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		// The SDK decodes every sampling answer as the with-tools form.
		sm, _ := req.Params.InputResponses["greeting"].(*mcp.CreateMessageWithToolsResult)
		if el != nil && sm != nil {
			name, _ := el.Content["name"].(string)
			var tc *mcp.TextContent
			if len(sm.Content) == 1 {
				tc, _ = sm.Content[0].(*mcp.TextContent)
			}
			if el.Action == "accept" && name != "" && tc != nil {
				return text(fmt.Sprintf("%s, %s", tc.Text, name)), nil, nil
			}
			return nil, nil, fmt.Errorf("bad input responses: %+v / %+v", el, sm)
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"name": &mcp.ElicitParams{
				Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "required": []string{"name"},
					"properties": map[string]any{"name": map[string]any{"type": "string"}}},
			},
			"greeting": &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet"}}},
			},
		}}, nil, nil
	})
	var grown atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("extra_%d", grown.Add(1))}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return text("extra"), nil, nil
		})
		return text("grown"), nil, nil
	})
	// block reports progress once it runs, then waits for its cancellation;
	// cancelled tells (waiting up to 30 s) how many block calls ended so.
	var (
		mu        sync.Mutex
		cancelled int
		changed   = make(chan struct{})
	)
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "blocking"})
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
			return text("never cancelled"), nil, nil
		}
		mu.Lock()
		cancelled++
		close(changed)
		changed = make(chan struct{})
		mu.Unlock()
		return nil, nil, errors.New("cancelled")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "cancelled"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		deadline := time.After(30 * time.Second)
		for {
			mu.Lock()
			n, ch := cancelled, changed
			mu.Unlock()
			if n > 0 {
				return text(fmt.Sprintf("cancelled: %d", n)), nil, nil
			}
			select {
			case <-ch:
			case <-deadline:
				return text("cancelled: 0"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
	})
	return s
}
