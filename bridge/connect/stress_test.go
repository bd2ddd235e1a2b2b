package connect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
)

// inputServer is a stateful (2025-only for a 2025 client) Go SDK server
// whose tool asks for elicitation, sampling and roots in one round, the way
// the SDK's conformance everything-server does: for a legacy session the
// SDK sends the three requests at once, on the call's stream, so they reach
// the bridge in any order and while it is busy answering the others.
func inputServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "input-remote", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "multi"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		in := req.Params.InputResponses
		name := ""
		if r, ok := in["user_name"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			name, _ = r.Content["name"].(string)
		}
		_, sampled := in["greeting"]
		roots, rooted := in["client_roots"].(*mcp.ListRootsResult)
		if name != "" && sampled && rooted && roots != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %s, %d root(s)", name, len(roots.Roots))}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"user_name": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "required": []string{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string"}}}},
			"greeting":     &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
			"client_roots": &mcp.ListRootsParams{},
		}, RequestState: "multi"}, nil, nil
	})
	return s
}

// inProcessHost runs a Bridge for cfg and connects a Go SDK client to its
// stdio over pipes: the bridge's goroutines run in the test binary, where
// -race sees them and a panic fails the test.
func inProcessHost(t *testing.T, ctx context.Context, cfg Config, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	remote.ForgetEra(cfg.URL)
	if testing.Verbose() {
		cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- b.Run(context.Background(), inR, outW)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		<-done
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run() = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after stdin closed")
		}
	})
	return cs
}

func inputHostOptions(c *counter) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.add("elicitation")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.add("sampling")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "hi"}}, nil
		},
	}
}

// (#21 item 1) Many concurrent calls whose remote asks for three inputs at
// once, from a 2026-07-28 host through the translation: the server's
// requests arrive while the bridge is answering the previous round, and
// a round must neither be answered twice nor end twice. Before the fix
// this panicked (close of closed channel) in 10 of 10 runs of this test
// under -race.
func TestTranslateModernHostConcurrentInputRounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	server := inputServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	var c counter
	client := inputHostOptions(&c)
	cs := inProcessHost(t, ctx, Config{URL: srv.URL}, client)
	const workers, calls = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "multi", Arguments: map[string]any{}})
				switch {
				case err != nil:
					errs <- fmt.Errorf("worker %d call %d: %w", w, i, err)
				case res.IsError || !strings.HasPrefix(textOf(res), "hello octocat"):
					errs <- fmt.Errorf("worker %d call %d: %q (error %v)", w, i, textOf(res), res.IsError)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d calls failed", n, workers*calls)
	}
}
