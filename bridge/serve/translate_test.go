package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// 2026-07-28 clients in front of a legacy-only child (examples/memos with
// its modern era turned off): the bridge initializes the child, answers
// server/discover, adds resultType, serves subscriptions/listen from the
// child's notifications and carries its elicitation requests as
// input_required (the child is dedicated to the one, anonymous, principal:
// a child shared by all is offered no client capability).
func TestModernClientLegacyChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBridge(t, Config{ChildPer: ChildPerPrincipal}, bins["memos"], "-modern=false", "-dynamic-tools", "-step-delay", "10ms")
	if !strings.Contains(b.log.String(), "legacy only") {
		t.Fatalf("era probe did not find a legacy-only child:\n%s", b.log.String())
	}
	var c tokenCounter
	opts := legacyOptions(&c, "modern-client")
	opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		c.add("elicit")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}
	cs := connectSDK(t, ctx, b.URL, "", opts)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	if name := cs.InitializeResult().ServerInfo.Name; name != "memos-example-adapter" {
		t.Errorf("serverInfo %q, want the child's", name)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("ListTools = %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{"pageSize": 1}})
	if err != nil || !strings.Contains(toolText(t, res), "memos/") {
		t.Fatalf("memo_list_memos = %v, %v", res, err)
	}
	p := &mcp.CallToolParams{Name: "memo_export_memos", Arguments: map[string]any{"steps": 3}}
	p.SetProgressToken("exp")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 progress events", func() bool { return c.count("exp") == 3 })
	// An elicitation the legacy child sends mid-call becomes input_required;
	// the SDK answers it and retries; the call completes.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_delete_memo", Arguments: map[string]any{"name": "memos/private-draft"}})
	if err != nil || toolText(t, res) != "deleted memos/private-draft" || c.count("elicit") != 1 {
		t.Fatalf("memo_delete_memo = %v, %v (elicitations %d)", res, err, c.count("elicit"))
	}
	// List changes reach a listen stream.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_toggle_beta"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tools/list_changed via subscriptions/listen", func() bool { return c.count("list_changed") > 0 })
}

// A raw look at the translated wire: resultType and cache hints on results,
// the DiscoverResult built from the child's InitializeResult.
func TestLegacyChildWire(t *testing.T) {
	b := startBridge(t, Config{ChildPer: ChildPerPrincipal}, bins["memos"], "-modern=false")
	_, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", ""))
	for _, want := range []string{`"resultType":"complete"`, `"supportedVersions":["2026-07-28"]`, `"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter"`, `"ttlMs":0`, `"cacheScope":"private"`, `"instructions":"Provides tools for querying Memos."`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("discover %s lacks %s", body, want)
		}
	}
	_, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", ""))
	if !strings.HasPrefix(string(body), `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[`) {
		t.Errorf("tools/list %.200s", body)
	}
	// A client without the elicitation capability is declined cleanly.
	_, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_delete_memo","arguments":{"name":"memos/private-draft"},`+modernMeta+`}}`, modernHeaders("tools/call", "memo_delete_memo"))
	if !strings.Contains(string(body), "kept memos/private-draft") {
		t.Errorf("declined elicitation: %s", body)
	}
}

// Legacy clients in front of a 2026-07-28-only child (examples/memos with
// its legacy era turned off): initialize is answered from the child's
// server/discover, each request gets the session's _meta envelope, an
// input_required result becomes an elicitation/create request to the
// client, and the child's list changes reach the session's GET stream.
func TestLegacyClientModernChild(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := startBridge(t, Config{}, bins["memos"], "-legacy=false", "-dynamic-tools", "-step-delay", "10ms")
			var c tokenCounter
			opts := legacyOptions(&c, "legacy-client")
			opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				c.add("elicit")
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}
			cs := connectSDK(t, ctx, b.URL, version, opts)
			if v := cs.InitializeResult().ProtocolVersion; v != version {
				t.Errorf("negotiated %q, want %q", v, version)
			}
			if cs.ID() == "" {
				t.Error("no session id")
			}
			if err := cs.Ping(ctx, nil); err != nil {
				t.Errorf("ping: %v", err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) < 5 {
				t.Fatalf("ListTools = %v, %v", tools, err)
			}
			p := &mcp.CallToolParams{Name: "memo_export_memos", Arguments: map[string]any{"steps": 3}}
			p.SetProgressToken("exp")
			if _, err := cs.CallTool(ctx, p); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "3 progress events", func() bool { return c.count("exp") == 3 })
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_delete_memo", Arguments: map[string]any{"name": "memos/private-draft"}})
			if err != nil || toolText(t, res) != "deleted memos/private-draft" || c.count("elicit") != 1 {
				t.Fatalf("memo_delete_memo = %v, %v (elicitations %d)", res, err, c.count("elicit"))
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a log notification after logging/setLevel", func() bool { return c.count("log") > 0 })
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_toggle_beta"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "tools/list_changed on the session", func() bool { return c.count("list_changed") > 0 })
		})
	}
}

// The Go SDK's everything-server speaks both eras; pinned as legacy, the
// bridge translates, and its sampling and elicitation requests travel to a
// 2026-07-28 client as input_required rounds (with a child per principal).
func TestModernClientPinnedLegacyEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, ChildPer: ChildPerPrincipal}, bins["everything"])
	var c tokenCounter
	cs := connectSDK(t, ctx, b.URL, "", legacyOptions(&c, "modern"))
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil || toolText(t, res) != "LLM response: sampled by modern" {
		t.Fatalf("sampling through input_required: %v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "name?"}})
	if err != nil || !strings.Contains(toolText(t, res), "username:modern") {
		t.Fatalf("elicitation through input_required: %v, %v", res, err)
	}
	p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	p.SetProgressToken("pp")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 progress events", func() bool { return c.count("pp") == 3 })
}

// A request that arrives while a translated child is still starting waits
// for the bridge's handshake instead of getting a half-built answer.
func TestRequestsWaitForSlowChild(t *testing.T) {
	h, err := New(Config{ChildProtocol: ChildLegacy, Command: commandFor("sh", "-c", `sleep 0.5; exec "$0" -modern=false`, bins["memos"])})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	srv := httptestServer(t, h)
	resp, body := rawPost(t, srv+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", ""))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("discover during start-up: %d %s", resp.StatusCode, body)
	}
}

// A legacy client that cancels its call while the bridge waits for its
// answer to an input_required round: the child has nothing left to cancel,
// so the bridge itself must end the call's stream and forget the round.
func TestLegacyCancelDuringInputRound(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"], "-legacy=false")
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcpRequest(ctx, http.MethodPost, b.URL, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memo_delete_memo","arguments":{"name":"memos/private-draft"}}}`, hdr)
	call, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer call.Body.Close()
	lines := bufio.NewScanner(call.Body)
	var elicitID any
	for elicitID == nil && lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(d), &m) == nil && m["method"] == "elicitation/create" {
				elicitID = m["id"]
			}
		}
	}
	if elicitID == nil {
		t.Fatalf("no elicitation/create on the call's stream (%v)", lines.Err())
	}

	resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user gave up"}}`, hdr)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	// The stream ends without a response to 7: the client cancelled it.
	rest, err := io.ReadAll(call.Body)
	if err != nil {
		t.Fatalf("the call's stream did not end after the cancellation: %v", err)
	}
	if strings.Contains(string(rest), `"id":7`) {
		t.Errorf("a response to the cancelled call: %s", rest)
	}
	if n := b.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after the cancellation, want 0", n)
	}

	// A late answer to the dropped round goes nowhere, and the session
	// goes on serving.
	idJSON, _ := json.Marshal(elicitID)
	resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":`+string(idJSON)+`,"result":{"action":"accept","content":{"confirm":true}}}`, hdr)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("late answer: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":100}}}`, hdr)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "private-draft") || strings.Contains(string(body), `"isError":true`) {
		t.Fatalf("the memo should still exist: %d %s", resp.StatusCode, body)
	}
}
