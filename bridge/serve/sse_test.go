package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectSSE connects the Go SDK's HTTP+SSE (2024-11-05) client to the
// SSE endpoint at url.
func connectSSE(t *testing.T, ctx context.Context, url string, hc *http.Client, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "sse-test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sseURL is the SSE endpoint next to a test bridge's MCP endpoint.
func sseURL(b *testBridge) string {
	p, _ := b.SSEPaths()
	return b.srv.URL + p
}

// The Go SDK's SSEClientTransport at /sse, in each session mode: the
// handshake, tools, a call with progress on the stream, server-to-client
// requests (sampling, elicitation) answered by POST, logs and list_changed
// on the stream.
func TestSSEGoSDKClient(t *testing.T) {
	for _, mode := range []SessionMode{SessionPerSession, SessionShared} {
		t.Run(string(mode), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := startBridge(t, Config{SessionMode: mode}, bins["everything"])
			var c tokenCounter
			cs := connectSSE(t, ctx, sseURL(b), nil, legacyOptions(&c, "alice"))
			if v := cs.InitializeResult().ProtocolVersion; v != "2024-11-05" {
				t.Errorf("negotiated %q, want 2024-11-05", v)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) < 10 {
				t.Fatalf("ListTools = %v, %v", tools, err)
			}
			p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			p.SetProgressToken("tok")
			if _, err := cs.CallTool(ctx, p); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "3 progress notifications", func() bool { return c.count("tok") == 3 })
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
			if n := b.sessions.count(); n != 1 {
				t.Errorf("%d sessions, want the SSE client's 1", n)
			}
			// Closing the stream ends the session.
			cs.Close()
			waitFor(t, "the session to end with its stream", func() bool { return b.sessions.count() == 0 })
		})
	}
}

// A 2024-11-05 client in front of a child that speaks only 2026-07-28 is
// translated like any 2025 session: the elicitation the child asks for as
// an input round reaches the client as elicitation/create on the stream.
func TestSSEGoSDKClientModernChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBridge(t, Config{}, bins["memos"], "-legacy=false", "-step-delay", "10ms")
	var c tokenCounter
	opts := legacyOptions(&c, "alice")
	opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		c.add("elicit")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}
	cs := connectSSE(t, ctx, sseURL(b), nil, opts)
	if v := cs.InitializeResult().ProtocolVersion; v != "2024-11-05" {
		t.Errorf("negotiated %q, want 2024-11-05", v)
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
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_delete_memo", Arguments: map[string]any{"name": "memos/private-draft"}})
	if err != nil || toolText(t, res) != "deleted memos/private-draft" || c.count("elicit") != 1 {
		t.Fatalf("memo_delete_memo = %v, %v (elicitations %d)", res, err, c.count("elicit"))
	}
}

// rawSSE is one HTTP+SSE stream opened by hand: its message URL, and its
// events as they come.
type rawSSE struct {
	resp    *http.Response
	message string // absolute URL
	events  chan [2]string
}

func openRawSSE(t *testing.T, ctx context.Context, base, path string, hdr map[string]string) *rawSSE {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	s := &rawSSE{resp: resp, events: make(chan [2]string, 64)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					s.events <- [2]string{ev, data}
				}
				ev, data = "", ""
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	first := s.next(t)
	if first[0] != "endpoint" || !strings.Contains(first[1], "?sessionId=") {
		t.Fatalf("first event %q, want endpoint", first)
	}
	s.message = base + first[1]
	return s
}

func (s *rawSSE) next(t *testing.T) [2]string {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return [2]string{}
}

// ssePost POSTs body to a message URL.
func ssePost(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const sseInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initRaw initializes the session of a raw stream.
func initRaw(t *testing.T, s *rawSSE, hdr map[string]string) {
	t.Helper()
	if st, b := ssePost(t, s.message, sseInit, hdr); st != 202 {
		t.Fatalf("initialize: %d %s", st, b)
	}
	if ev := s.next(t); ev[0] != "message" || !strings.Contains(ev[1], `"protocolVersion"`) {
		t.Fatalf("initialize answer %q", ev)
	}
	if st, b := ssePost(t, s.message, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); st != 202 {
		t.Fatalf("initialized: %d %s", st, b)
	}
}

// Paths: the message path sits next to the SSE path; an explicit SSEPath
// moves both; NoSSE serves neither; a path that collides is refused.
func TestSSEPaths(t *testing.T) {
	for _, c := range []struct {
		cfg         Config
		stream, msg string
		wantErr     bool
	}{
		{Config{}, "/sse", "/message", false},
		{Config{Path: "/servers/a/mcp"}, "/servers/a/sse", "/servers/a/message", false},
		{Config{SSEPath: "/x/sse"}, "/x/sse", "/x/message", false},
		{Config{NoSSE: true}, "", "", false},
		{Config{SSEPath: "/mcp"}, "", "", true},
		{Config{Path: "/message", SSEPath: "/events"}, "", "", true},
		{Config{SSEPath: "sse"}, "", "", true},
	} {
		c.cfg.Command = commandFor("true")
		h, err := New(c.cfg)
		if (err != nil) != c.wantErr || (err != nil && !errors.Is(err, ErrSSEPath)) {
			t.Errorf("%+v: New error %v, want error %v", c.cfg, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if s, m := h.SSEPaths(); s != c.stream || m != c.msg {
			t.Errorf("%+v: paths %q %q, want %q %q", c.cfg, s, m, c.stream, c.msg)
		}
	}
	b := startBridge(t, Config{NoSSE: true}, bins["memos"])
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /sse with NoSSE: %d, want 404", resp.StatusCode)
	}
}
