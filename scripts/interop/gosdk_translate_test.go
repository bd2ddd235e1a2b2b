//go:build interop

package interop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Go SDK client, speaking 2026-07-28, against mcp-bridge serve in front
// of server-everything 2026.8.31 over stdio, which speaks only the 2025
// handshake: the bridge translates. The same checks as the TS v2 client:
// discover, tools, progress, listen notifications after a list change, and
// sampling and elicitation through input_required (which needs a child per
// principal: a child shared by all is offered no client capability).
func TestGoSDKModernClientToLegacyServerEverything(t *testing.T) {
	b := startBridge(t, serveOpts{Child: serverEverythingStdio(), Flags: []string{"--child-per", "principal"}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	counts := map[string]int{}
	add := func(k string) { mu.Lock(); counts[k]++; mu.Unlock() }
	get := func(k string) int { mu.Lock(); defer mu.Unlock(); return counts[k] }
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { add("progress") },
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			add("sampling")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop", Content: &mcp.TextContent{Text: "sampled by the Go SDK"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			add("elicitation")
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { add("resources_list_changed") },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28 (the bridge plays the modern server)", v)
	}
	if n := cs.InitializeResult().ServerInfo.Name; n != "mcp-servers/everything" {
		t.Errorf("serverInfo %q, want the child's", n)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	text := func(res *mcp.CallToolResult) string {
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String()
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "from the Go SDK"}})
	if err != nil || text(res) != "Echo: from the Go SDK" {
		t.Fatalf("echo: %v, %v", res, err)
	}
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.5, "steps": 3}}
	p.SetProgressToken("go-sdk-progress")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "3 progress notifications", func() bool { return get("progress") >= 3 })

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || !strings.Contains(text(res), "sampled by the Go SDK") || get("sampling") != 1 {
		t.Fatalf("sampling through input_required: %v, %v (handler ran %d times)", res, err, get("sampling"))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
	if err != nil || get("elicitation") != 1 {
		t.Fatalf("elicitation through input_required: %v, %v (handler ran %d times)", res, err, get("elicitation"))
	}

	// A listen stream for resource list changes (the SDK opens one when a
	// ResourceListChangedHandler is set); gzip-file-as-resource adds one.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gzip-file-as-resource", Arguments: map[string]any{
		"name": "go-sdk.txt.gz", "data": "data:text/plain;base64,aW50ZXJvcA==",
	}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "notifications/resources/list_changed on a listen stream", func() bool { return get("resources_list_changed") > 0 })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling the client's handlers
	}
}
