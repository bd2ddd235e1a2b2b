package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ccfgPeer is a Go SDK v1.8.0 Streamable HTTP server with echo, progress
// and secret: stateful (the SDK's default, 2025 sessions only) or, with
// modern, stateless and restricted to 2026-07-28.
func ccfgPeer(t *testing.T, name string, modern bool) (*httptest.Server, http.Handler) {
	t.Helper()
	opts := &mcp.ServerOptions{}
	if modern {
		opts.SupportedProtocolVersions = []string{"2026-07-28"}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Message}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= 3; i++ {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3}); err != nil {
					return nil, nil, err
				}
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " progress done"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "leaked"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: modern})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return ts, h
}

// (#26) connect --config: a Go SDK host speaking 2026-07-28 through ONE
// connect process sees a 2025-only remote ("old"), a 2026-07-28-only
// remote ("new") and a stdio server ("memos") as one server: their tools
// as <server>_<tool>, each callable, progress relayed from both remotes;
// an entry's deny hides and refuses a tool, another's allow leaves its
// others out; killing one remote leaves the others answering.
func TestConnectConfigAggregatesRemotesAndStdio(t *testing.T) {
	old, _ := ccfgPeer(t, "old", false)
	modern, modernHandler := ccfgPeer(t, "new", true)
	cfg := fmt.Sprintf(`{"mcpServers": {
  "old": {"type": "http", "url": %q, "headers": {"X-Test": "${CCFG_TEST_HEADER}"}},
  "new": {"type": "http", "url": %q},
  "memos": {"command": %q}
},
"mcpBridge": {"servers": {
  "old": {"tools": {"deny": ["secret"]}},
  "new": {"tools": {"allow": ["echo", "progress"]}}
}}}`, old.URL+"/mcp", modern.URL+"/mcp", bin["memos"])
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--config", file, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "CCFG_TEST_HEADER=ccfg-hdr-9f3e")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	var mu sync.Mutex
	progress := map[any]int{}
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress[req.Params.ProgressToken]++
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			t.Logf("connect --config log:\n%s", tail(stderr.String(), 40))
		}
	}()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %q, want 2026-07-28", v)
	}
	// A server slower than the join timeout joins later: list until all
	// three are in (bounded by ctx).
	want := []string{"old_echo", "old_progress", "new_echo", "new_progress", "memos_auth_get_current_user"}
	var names []string
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(names, n) }) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // polling the aggregate's late joins
		}
	}
	for _, n := range want {
		if !slices.Contains(names, n) {
			t.Errorf("tools/list lacks %s: %q", n, names)
		}
	}
	for _, n := range []string{"old_secret", "new_secret"} {
		if slices.Contains(names, n) {
			t.Errorf("the filtered %s is listed", n)
		}
	}
	call := func(name string, args map[string]any) (string, error) {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		if !strings.HasSuffix(name, "_echo") {
			args = map[string]any{}
		}
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		p.SetProgressToken(name)
		res, err := cs.CallTool(cctx, p)
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", textOf(res))
		}
		return textOf(res), nil
	}
	for name, want := range map[string]string{
		"old_echo":                    "old: hi",
		"new_echo":                    "new: hi",
		"memos_auth_get_current_user": "users/1",
		"old_progress":                "old progress done",
		"new_progress":                "new progress done",
	} {
		got, err := call(name, map[string]any{"message": "hi"})
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	// The SDK runs notification handlers apart from the call's result:
	// the last ones may land just after it.
	for _, tok := range []string{"old_progress", "new_progress"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			n := progress[tok]
			mu.Unlock()
			if n == 3 {
				break
			}
			if n > 3 || time.Now().After(deadline) {
				t.Errorf("%s: %d progress notifications, want 3", tok, n)
				break
			}
			time.Sleep(10 * time.Millisecond) // polling the SDK's handler goroutines
		}
	}
	for _, name := range []string{"old_secret", "new_secret"} {
		if got, err := call(name, nil); err == nil || strings.Contains(got, "leaked") {
			t.Errorf("the filtered %s was callable: %q", name, got)
		}
	}

	// One remote goes away: its calls fail, the others go on.
	modern.CloseClientConnections()
	modern.Close()
	if got, err := call("new_echo", map[string]any{"message": "gone"}); err == nil {
		t.Errorf("new_echo after the remote was killed: %q", got)
	}
	for name, want := range map[string]string{"old_echo": "old: still", "memos_auth_get_current_user": "users/1"} {
		if got, err := call(name, map[string]any{"message": "still"}); err != nil || !strings.Contains(got, want) {
			t.Errorf("%s after another remote was killed: %q, %v", name, got, err)
		}
	}
	// It comes back at the same address: the open session reaches it
	// again, with no restart of anything.
	ln, err := net.Listen("tcp", modern.Listener.Addr().String())
	if err != nil {
		t.Fatalf("listening again at the modern remote's address: %v", err)
	}
	back := &httptest.Server{Listener: ln, Config: &http.Server{Handler: modernHandler}}
	back.Start()
	defer func() {
		back.CloseClientConnections()
		back.Close()
	}()
	for {
		got, err := call("new_echo", map[string]any{"message": "back"})
		if err == nil && got == "new: back" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("new_echo never answered again once its remote was back: %q, %v", got, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // polling the remote's return
		}
	}
	if strings.Contains(stderr.String(), "ccfg-hdr-9f3e") {
		t.Error("a header value reached the log")
	}
}

// The flags that describe one remote, and a URL beside --config, are
// refused with the reason, before anything starts.
func TestConnectConfigUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"m": {"command": "true"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "--config", file, "http://127.0.0.1:1/mcp"}, "--config and a URL are exclusive"},
		{[]string{"connect", "--config", file, "-H", "X: y"}, "--header does not apply with --config"},
		{[]string{"connect", "--config", file, "--bearer-token", "t"}, "--bearer-token does not apply with --config"},
		{[]string{"connect", "--config", file, "--protocol", "modern"}, "--protocol does not apply with --config"},
		{[]string{"connect", "--config", file, "--transport", "sse"}, "--transport does not apply with --config"},
		{[]string{"connect", "--config", file, "--oauth-scope", "x"}, "--oauth-scope does not apply with --config"},
		{[]string{"connect", "--config", file, "--tools-deny", "rm_["}, `glob "rm_["`},
		{[]string{"connect", "--config", filepath.Join(t.TempDir(), "none.json")}, "connect: --config"},
	} {
		code, stdout, stderr := runCLI(tt.args...)
		if code == exitOK || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("mcp-bridge %q: exit %d, stdout %q, stderr %q; want a failure naming %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// --tools-allow/--tools-deny with --config filter the aggregated names,
// on top of each entry's own filter: hidden and refused.
func TestConnectConfigToolsDenyFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}}`, bin["memos"])), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--config", file, "--tools-deny", "memos_memo_*")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "memos_auth_get_current_user") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "memos_memo_") }) {
		t.Errorf("tools/list with --tools-deny memos_memo_*: %q", names)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memos_memo_list_memos", Arguments: map[string]any{}}); err == nil && !r.IsError {
		t.Errorf("the denied memos_memo_list_memos was callable: %+v", r)
	}
}
