package connect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Acceptance tests of cross-era translation with real peers: the Go SDK
// client as the host, the mcp-bridge binary in between, Go SDK and mcp-go
// servers as remotes.

// modernServer is a Go SDK server for stateless HTTP: echo, progress,
// grow (changes the tool list) and whoami, which asks for an elicitation
// with input_required the way the SDK's conformance server does. With
// versions it speaks only those.
func modernServer(versions ...string) *mcp.Server {
	s2 := mcp.NewServer(&mcp.Implementation{Name: "sdk-modern", Version: "2"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		Instructions:              "a stateless server",
	})
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s2, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s2, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s2, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["user_name"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			if name, _ := r.Content["name"].(string); name != "" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + name + "!"}}}, nil, nil
			}
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"user_name": &mcp.ElicitParams{
				Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "required": []string{"name"},
					"properties": map[string]any{"name": map[string]any{"type": "string"}}},
			},
		}}, nil, nil
	})
	mcp.AddTool(s2, &mcp.Tool{Name: "grow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s2, &mcp.Tool{Name: fmt.Sprintf("extra_%d", time.Now().UnixNano())}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
	})
	return s2
}

func legacyHostOptions(c *counter) *mcp.ClientOptions {
	o := clientOptions(c)
	o.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		c.add("elicitation")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
	}
	return o
}

// A 2025-11-25 host on a stateless Go SDK server: the bridge answers
// initialize from server/discover, adds the _meta envelope, turns
// input_required into an elicitation request to the host and retries, and
// carries list_changed from a subscriptions/listen stream.
//
// A stateless Go SDK server restricted to 2026-07-28 still answers a legacy
// initialize (with 2025-11-25) and then refuses everything carrying that
// version, which auto detects. Unrestricted it is dual-era: it serves a
// legacy host statelessly, but cannot send it server-to-client requests, so
// an elicitation needs --protocol modern.
func TestTranslateLegacyHostGoSDKStateless(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		flags    []string
	}{
		{"modern-only/auto", []string{"2026-07-28"}, nil},
		{"modern-only/pinned", []string{"2026-07-28"}, []string{"--protocol", "modern"}},
		{"dual-era/pinned", nil, []string{"--protocol", "modern"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			server := modernServer(tc.versions...)
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(srv.Close)
			var c counter
			cs := connectThroughBridge(t, ctx, srv.URL, tc.flags, "2025-11-25", legacyHostOptions(&c))
			ir := cs.InitializeResult()
			if ir.ProtocolVersion != "2025-11-25" || ir.ServerInfo == nil || ir.ServerInfo.Name != "sdk-modern" {
				t.Errorf("initialize result %+v (server %+v), want 2025-11-25 from sdk-modern", ir, ir.ServerInfo)
			}
			checkBasics(t, ctx, cs, &c)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if err != nil || textOf(res) != "Hello, octocat!" {
				t.Fatalf("whoami = %v, %v", res, err)
			}
			if n := c.get("elicitation"); n != 1 {
				t.Errorf("%d elicitations, want 1", n)
			}
			// ping and logging/setLevel do not exist in 2026-07-28: answered here.
			if err := cs.Ping(ctx, nil); err != nil {
				t.Errorf("ping: %v", err)
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Errorf("logging/setLevel: %v", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "notifications/tools/list_changed", func() bool { return c.get("list_changed") >= 1 })
		})
	}
}

// A 2026-07-28 host on a stateful (legacy-only) Go SDK server: discover is
// answered from a legacy session's InitializeResult, the sampling request
// the tool makes mid-call reaches the host as input_required, and the tool
// list change reaches the host's own subscriptions/listen.
func TestTranslateModernHostGoSDKStateful(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := goSDKServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "", clientOptions(&c))
	modernHostChecks(t, ctx, cs, &c, "sdk-remote")
	var ids []string
	for ss := range server.Sessions() {
		ids = append(ids, ss.ID())
	}
	if len(ids) != 1 || ids[0] == "" {
		t.Errorf("server sessions %q, want the bridge's one", ids)
	}
}

// The same against mcp-go v1.2.1 pinned to 2025 versions, which sends its
// sampling request on the GET stream rather than the call's stream.
func TestTranslateModernHostMCPGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(mcpGoServer())
	t.Cleanup(srv.Close)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL+"/mcp", nil, "", clientOptions(&c))
	modernHostChecks(t, ctx, cs, &c, "mcp-go-remote")
}

// modernHostChecks runs the modern host's side of the acceptance list.
func modernHostChecks(t *testing.T, ctx context.Context, cs *mcp.ClientSession, c *counter, server string) {
	t.Helper()
	ir := cs.InitializeResult()
	if ir.ProtocolVersion != "2026-07-28" || ir.ServerInfo == nil || ir.ServerInfo.Name != server {
		t.Errorf("discover result %+v (server %+v), want 2026-07-28 from %s", ir, ir.ServerInfo, server)
	}
	checkBasics(t, ctx, cs, c)
	checkSampleAndListChanged(t, ctx, cs, c, "notifications/tools/list_changed on the listen stream")
	if n := c.get("sampling"); n != 1 {
		t.Errorf("%d sampling requests reached the host, want 1", n)
	}
}

// A 2026-07-28 host retries an input round with a new id and a new
// progressToken; the stateful Go SDK server goes on reporting progress
// under the token of the request it got, the first round's. Every progress
// notification must reach the host under the retry's token: the host has
// forgotten the first one.
func TestTranslateModernHostProgressAfterInputRound(t *testing.T) {
	server := goSDKServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
	h := startHost(t, Config{URL: srv.URL})
	env := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}`
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample_progress","arguments":{},"_meta":{"progressToken":"round-1",` + env + `}}}`)
	ir, _ := h.response("1", 20*time.Second)
	res, _ := ir["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || dig(res, "inputRequests", "input-1", "method") != "sampling/createMessage" || state == "" {
		t.Fatalf("first round: %v", ir)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample_progress","arguments":{},`+
		`"inputResponses":{"input-1":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}},"requestState":%q,`+
		`"_meta":{"progressToken":"round-2",%s}}}`, state, env))
	final, others := h.response("2", 20*time.Second)
	if dig(final, "result", "resultType") != "complete" || !strings.Contains(jsonText(final["result"]), "done") {
		t.Fatalf("final answer %v", final)
	}
	var tokens []any
	for _, m := range others {
		if m["method"] == "notifications/progress" {
			tokens = append(tokens, dig(m, "params", "progressToken"))
		}
	}
	if len(tokens) != 3 || tokens[0] != "round-2" || tokens[1] != "round-2" || tokens[2] != "round-2" {
		t.Errorf("progress tokens the host got: %v, want round-2 three times", tokens)
	}
}
