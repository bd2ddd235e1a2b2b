package serve

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyOptions answers sampling and elicitation and counts notifications.
func legacyOptions(c *tokenCounter, name string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: c.handle,
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled by " + name}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": name}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.add("list_changed") },
		LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) { c.add("log") },
	}
}

func (c *tokenCounter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

// Legacy sessions: server-to-client requests reach the right client and
// its answers go back to the child; the child's own notifications
// (list_changed, logs) reach the session.
func TestLegacyServerToClient(t *testing.T) {
	for _, mode := range []SessionMode{SessionPerSession, SessionShared} {
		for _, version := range []string{"2025-11-25", "2025-06-18"} {
			t.Run(string(mode)+"/"+version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				b := startBridge(t, Config{SessionMode: mode}, bins["everything"])
				var c tokenCounter
				cs := connectSDK(t, ctx, b.URL, version, legacyOptions(&c, "alice"))
				if cs.ID() == "" {
					t.Error("no Mcp-Session-Id")
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
				if err != nil || toolText(t, res) != "LLM response: sampled by alice" {
					t.Fatalf("sampling round trip: %v, %v", res, err)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "name?"}})
				if err != nil || !strings.Contains(toolText(t, res), "username:alice") {
					t.Fatalf("elicitation round trip: %v, %v", res, err)
				}
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "log notifications", func() bool { return c.count("log") > 0 })
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_tool_change", Arguments: map[string]any{}}); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "tools/list_changed", func() bool { return c.count("list_changed") > 0 })
			})
		}
	}
}

// In shared mode several sessions share one child: each still gets its own
// progress and its own server-to-client requests.
func TestSharedModeSessionsStayApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBridge(t, Config{SessionMode: SessionShared}, bins["everything"])
	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("client-%d", i)
			var c tokenCounter
			cs := connectSDK(t, ctx, b.URL, "2025-11-25", legacyOptions(&c, name))
			p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			p.SetProgressToken("same-token")
			if _, err := cs.CallTool(ctx, p); err != nil {
				t.Error(err)
				return
			}
			waitFor(t, "3 progress events", func() bool { return c.count("same-token") >= 3 })
			if got := c.count("same-token"); got != 3 {
				t.Errorf("%s: %d progress events, want exactly its own 3", name, got)
			}
			// With several sessions in flight a sampling request cannot be
			// attributed: it must fail rather than reach another client.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
			if err == nil && !res.IsError && toolText(t, res) != "LLM response: sampled by "+name {
				t.Errorf("%s got a sampling answer from another client: %s", name, toolText(t, res))
			}
		})
	}
	wg.Wait()
	// One session at a time: the request is attributable and goes through.
	for i := range 2 {
		name := fmt.Sprintf("solo-%d", i)
		var c tokenCounter
		cs := connectSDK(t, ctx, b.URL, "2025-11-25", legacyOptions(&c, name))
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
		if err != nil || toolText(t, res) != "LLM response: sampled by "+name {
			t.Errorf("%s sampling: %v, %v", name, res, err)
		}
		cs.Close()
	}
	// One child served them all.
	started := 0
	for _, line := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(line, `"child":"legacy-shared"`) && strings.Contains(line, `"message":"child started"`) {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d shared legacy children started, want 1", started)
	}
}

// A per-session child ends with its session: DELETE kills it and the
// grandchild it started, and a later request on that session gets 404.
func TestPerSessionDeleteEndsChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pids := filepath.Join(t.TempDir(), "pids")
	// Each child starts a grandchild that ignores SIGTERM, then becomes memos.
	b := startBridge(t, Config{}, "sh", "-c", `trap '' TERM; sleep 300 & echo $! >> "$0"; trap - TERM; exec "$1"`, pids, bins["memos"])
	cs := connectSDK(t, ctx, b.URL, "2025-11-25", nil)
	sid := cs.ID()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_debug_stats"})
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	fmt.Sscanf(toolText(t, res)[strings.Index(toolText(t, res), `"pid":`)+6:], "%d", &pid)
	if pid == 0 || !alive(pid) {
		t.Fatalf("session child pid %d not running", pid)
	}
	grandchildren := func() []int {
		b, _ := os.ReadFile(pids)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			var p int
			fmt.Sscan(f, &p)
			out = append(out, p)
		}
		return out
	}
	// Probe siblings, the shared child and this session's child each started one.
	before := grandchildren()
	cs.Close() // the SDK sends DELETE
	waitFor(t, "the session's child to exit", func() bool { return !alive(pid) })
	last := before[len(before)-1]
	waitFor(t, "the session child's grandchild to exit", func() bool { return !alive(last) })
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("request on a deleted session: %d %s, want 404", resp.StatusCode, body)
	}
}

// Batches are a 2025-03-26 feature only.
func TestBatches(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"])
	open := func(version string) string {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize %s: %d %s", version, resp.StatusCode, body)
		}
		rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": sid})
		return sid
	}
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`
	sid := open("2025-03-26")
	resp, body := rawPost(t, b.URL, " \t"+batch, map[string]string{"Mcp-Session-Id": sid}) // leading whitespace is still a batch
	if resp.StatusCode != 200 {
		t.Fatalf("2025-03-26 batch: %d %s", resp.StatusCode, body)
	}
	msgs := messages(t, resp, body)
	ids := map[any]bool{}
	for _, m := range msgs {
		ids[m["id"]] = true
	}
	if !ids[float64(1)] || !ids[float64(2)] || len(msgs) != 2 {
		t.Errorf("batch answers %v, want responses to ids 1 and 2", msgs)
	}
	sid = open("2025-11-25")
	resp, body = rawPost(t, b.URL, batch, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != 400 || !strings.Contains(string(body), "-32600") {
		t.Errorf("2025-11-25 batch: %d %s, want 400 -32600", resp.StatusCode, body)
	}
}

// What a legacy session refuses with 400 before anything reaches the child.
func TestLegacyRequestChecks(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"])
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp, body := rawPost(t, b.URL, initialize, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct{ name, body, version string }{
		{"initialize inside a session", initialize, ""},
		{"initialize in a batch", `[` + initialize + `]`, ""},
		{"unsupported MCP-Protocol-Version", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2099-01-01"},
	} {
		resp, body := rawPost(t, b.URL, tc.body, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": tc.version})
		if resp.StatusCode != 400 || !strings.Contains(string(body), "-32600") {
			t.Errorf("%s: %d %s, want 400 -32600", tc.name, resp.StatusCode, body)
		}
	}
}
