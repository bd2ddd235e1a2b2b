package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectSDK connects a Go SDK client to url; version "" means the SDK's
// default, which is 2026-07-28 (server/discover, no session).
func connectSDK(t *testing.T, ctx context.Context, url, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%s): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// teeCommand runs server with every line the bridge writes to its stdin
// also appended to log, so a test can see what reached the child.
//
// Each line is in log before the server can read it, so a test that got
// an answer may read log at once: the shell appends the line to log, and
// only once that append returned writes it to the server. With `tee log |
// server` the server could read and answer a line before tee appended it
// (tee writes its stdout first, and a loaded machine may deschedule it
// between the two writes): TestTraceReachesChildOnEveryPath then read a
// log without the request. tee's order of outputs is not portable
// either, hence the loop; the lines are requests, small enough that
// reading them a byte at a time costs nothing.
func teeCommand(log string, server ...string) []string {
	return []string{"sh", "-c", `while IFS= read -r l || [ -n "$l" ]; do printf '%s\n' "$l" >>"$0"; printf '%s\n' "$l"; done | exec "$@"`, log, server[0]}
}

var sdkVersions = []struct{ name, version, want string }{
	{"modern", "", "2026-07-28"},
	{"2025-11-25", "2025-11-25", "2025-11-25"},
	{"2025-06-18", "2025-06-18", "2025-06-18"},
}

func TestGoSDKClientEverythingServer(t *testing.T) {
	for _, v := range sdkVersions {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			log := filepath.Join(t.TempDir(), "stdin.log")
			b := startBridge(t, Config{}, teeCommand(log, bins["everything"])...)
			var progress tokenCounter
			cs := connectSDK(t, ctx, b.URL, v.version, &mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
			if got := cs.InitializeResult().ProtocolVersion; got != v.want {
				t.Errorf("negotiated %q, want %q", got, v.want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) < 10 {
				t.Errorf("ListTools returned %d tools", len(tools.Tools))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
			if err != nil || toolText(t, res) != "This is a simple text response for testing." {
				t.Fatalf("CallTool(test_simple_text) = %v, %v", res, err)
			}
			params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			tok1 := "tok-1"
			params.SetProgressToken(tok1)
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			// The SDK hands notifications to the handler asynchronously, so the
			// last one may trail the result by a moment.
			waitFor(t, "3 progress notifications", func() bool { return progress.count(tok1) == 3 })
			// Cancel a call that is still running: the child must be told.
			cctx, ccancel := context.WithCancel(ctx)
			params = &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			params.SetProgressToken("tok-2")
			go func() {
				for progress.count("tok-2") == 0 && cctx.Err() == nil {
					time.Sleep(time.Millisecond) // waiting for the SDK's callback
				}
				ccancel()
			}()
			if _, err := cs.CallTool(cctx, params); err == nil {
				t.Fatal("cancelled call succeeded")
			}
			waitFor(t, "notifications/cancelled to reach the child", func() bool {
				b, _ := os.ReadFile(log)
				return strings.Contains(string(b), `"method":"notifications/cancelled"`)
			})
		})
	}
}

func TestGoSDKClientMemos(t *testing.T) {
	for _, v := range sdkVersions {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := startBridge(t, Config{}, bins["memos"], "-step-delay", "20ms")
			var progress tokenCounter
			cs := connectSDK(t, ctx, b.URL, v.version, &mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
			if got := cs.InitializeResult().ProtocolVersion; got != v.want {
				t.Errorf("negotiated %q, want %q", got, v.want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) == 0 || tools.Tools[0].Name != "memo_list_memos" {
				t.Fatalf("ListTools = %+v", tools.Tools)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{"pageSize": 1, "filter": `visibility != "PRIVATE"`}})
			if err != nil || !strings.Contains(toolText(t, res), "memos/example-public-memo") {
				t.Fatalf("memo_list_memos = %v, %v", res, err)
			}
			params := &mcp.CallToolParams{Name: "memo_export_memos", Arguments: map[string]any{"steps": 3}}
			tok1 := 7
			params.SetProgressToken(tok1)
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			// The SDK hands notifications to the handler asynchronously, so the
			// last one may trail the result by a moment.
			waitFor(t, "3 progress notifications", func() bool { return progress.count(tok1) == 3 })
			cctx, ccancel := context.WithCancel(ctx)
			params = &mcp.CallToolParams{Name: "memo_export_memos", Arguments: map[string]any{"steps": 1000}}
			params.SetProgressToken(8)
			go func() {
				for progress.count(8) == 0 && cctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				ccancel()
			}()
			if _, err := cs.CallTool(cctx, params); err == nil {
				t.Fatal("cancelled call succeeded")
			}
			waitFor(t, "the child to count the cancellation", func() bool {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_debug_stats"})
				return err == nil && strings.Contains(toolText(t, res), `"cancelled":1`)
			})
		})
	}
}

// tokenCounter counts progress notifications per progress token.
type tokenCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *tokenCounter) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[fmt.Sprint(req.Params.ProgressToken)]++
}

func (c *tokenCounter) count(token any) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[fmt.Sprint(token)]
}

// waitFor polls cond (which observes another process) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}
