package connect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// filterServer is a Go SDK server whose tools count their calls in c:
// echo, read_file, rm_rf, rm_tmp and grow, which adds rm_later and
// safe_later (a tools/list_changed the host re-lists after). Its pages
// hold two tools, so a listing takes several tools/list requests.
func filterServer(c *counter, versions ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "filter-remote", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		PageSize:                  2,
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				c.add(method)
			}
			return next(ctx, method, req)
		}
	})
	tool := func(name string) {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			c.add(name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil, nil
		})
	}
	for _, n := range []string{"echo", "read_file", "rm_rf", "rm_tmp"} {
		tool(n)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tool("rm_later")
		tool("safe_later")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
	})
	return s
}

// allTools lists every page of the host's tools, sorted.
func allTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// --tools-allow/--tools-deny through the mcp-bridge binary, with a Go SDK
// host and a Go SDK remote in each pairing of eras, pass-through and
// translated: a hidden tool is in no tools/list page (before and after a
// tools/list_changed), and a call of one is answered with an error by the
// bridge, never reaching the remote.
func TestToolFilter(t *testing.T) {
	eras := []struct {
		name      string
		hostVer   string   // "" : the SDK's newest, 2026-07-28
		versions  []string // the remote's
		stateless bool
	}{
		{"legacy-host/legacy-remote", "2025-11-25", nil, false},
		{"modern-host/modern-remote", "", nil, true},
		{"legacy-host/modern-remote", "2025-11-25", []string{"2026-07-28"}, true},
		{"modern-host/legacy-remote", "", nil, false},
	}
	filters := []struct {
		name          string
		flags         []string
		listed, grown []string // what the host sees before and after grow
		refused       []string
		callable      string
	}{
		{
			name:     "deny",
			flags:    []string{"--tools-deny", "rm_*"},
			listed:   []string{"echo", "grow", "read_file"},
			grown:    []string{"echo", "grow", "read_file", "safe_later"},
			refused:  []string{"rm_rf", "rm_tmp"},
			callable: "read_file",
		},
		{
			// Allow offers only what it names; deny wins over allow.
			name:     "allow+deny",
			flags:    []string{"--tools-allow", "rm_*", "--tools-allow", "grow", "--tools-deny", "rm_rf", "--tools-deny", "rm_l?ter"},
			listed:   []string{"grow", "rm_tmp"},
			grown:    []string{"grow", "rm_tmp"},
			refused:  []string{"rm_rf", "echo", "read_file", "rm_later", "safe_later"},
			callable: "rm_tmp",
		},
	}
	for _, era := range eras {
		for _, f := range filters {
			t.Run(era.name+"/"+f.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				var calls, host counter
				server := filterServer(&calls, era.versions...)
				srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: era.stateless}))
				t.Cleanup(srv.Close)
				flags := f.flags
				if era.name == "legacy-host/modern-remote" {
					flags = append([]string{"--protocol", "modern"}, flags...)
				}
				cs := connectThroughBridge(t, ctx, srv.URL, flags, era.hostVer, clientOptions(&host))
				if got := allTools(t, ctx, cs); !slices.Equal(got, f.listed) {
					t.Errorf("tools %q, want %q", got, f.listed)
				}
				if n := calls.get("tools/list"); n < 3 {
					t.Errorf("the listing took %d tools/list requests, want pages (3)", n)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: f.callable, Arguments: map[string]any{}})
				if err != nil || textOf(res) != "ran "+f.callable {
					t.Fatalf("%s = %v, %v", f.callable, res, err)
				}
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
					t.Fatalf("grow: %v", err)
				}
				waitFor(t, "notifications/tools/list_changed", func() bool { return host.get("list_changed") >= 1 })
				if got := allTools(t, ctx, cs); !slices.Equal(got, f.grown) {
					t.Errorf("tools after tools/list_changed %q, want %q", got, f.grown)
				}
				for _, name := range f.refused {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
					if err == nil || !strings.Contains(err.Error(), `tool "`+name+`" is not available`) {
						t.Errorf("call of hidden %s: err %v, want `tool %q is not available`", name, err, name)
					}
					if n := calls.get(name); n != 0 {
						t.Errorf("the remote ran hidden %s %d times, want 0", name, n)
					}
				}
				if n := calls.get(f.callable); n != 1 {
					t.Errorf("the remote ran %s %d times, want 1", f.callable, n)
				}
			})
		}
	}
}

// A 2025-03-26 batch goes to the remote as one POST: a call of a hidden
// tool in it is answered here and taken out; the rest passes byte for byte.
func TestToolFilterBatch(t *testing.T) {
	srv, posted := batchRemote(t)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy, ToolFilter: func(name string) bool { return name != "rm_rf" }})
	h.send(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"prompts/list"}]`)
	got := map[float64]map[string]any{}
	for range 3 {
		m := h.next(10 * time.Second)
		id, _ := m["id"].(float64)
		got[id] = m
	}
	if got[1]["result"] == nil || got[2]["result"] == nil || !strings.Contains(errorMessage(got[3]), `tool "rm_rf" is not available`) {
		t.Errorf("answers %v, want results for 1 and 2 and the hidden tool's error for 3", got)
	}
	const rest = `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"prompts/list"}]`
	if bodies := posted(); len(bodies) != 1 || bodies[0] != rest {
		t.Errorf("remote got %q, want %q", bodies, rest)
	}
	// Only hidden calls: nothing is posted.
	h.send(`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"rm_rf"}}]`)
	if m := h.next(10 * time.Second); m["id"] != float64(4) || !strings.Contains(errorMessage(m), "is not available") {
		t.Errorf("answer %v, want the hidden tool's error for 4", m)
	}
	if n := len(posted()); n != 1 {
		t.Errorf("remote got %d POSTs, want still 1", n)
	}
}
