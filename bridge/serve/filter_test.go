package serve

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The filter hides tools from tools/list in both eras (every page) and
// refuses their calls before the child: the tee log shows the child never
// saw the call.
func TestToolFilter(t *testing.T) {
	deny := func(name string) bool {
		m, _ := path.Match("test_*_image", name)
		return !m && name != "test_simple_text"
	}
	for _, v := range sdkVersions[:2] {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			log := filepath.Join(t.TempDir(), "stdin.log")
			b := startBridge(t, Config{ToolFilter: deny}, teeCommand(log, bins["everything"])...)
			cs := connectSDK(t, ctx, b.URL, v.version, nil)
			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if len(names) < 5 {
				t.Fatalf("tools = %v", names)
			}
			for _, n := range names {
				if !deny(n) {
					t.Errorf("tools/list shows the filtered tool %q", n)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
			if err == nil || !strings.Contains(err.Error(), `tool "test_simple_text" is not available`) {
				t.Fatalf("CallTool(filtered) = %v, %v; want the not-available error", res, err)
			}
			// The session is still fine, and allowed tools work.
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("CallTool(allowed) = %v", err)
			}
			seen, _ := os.ReadFile(log)
			if strings.Contains(string(seen), "test_simple_text") {
				t.Errorf("the filtered call reached the child:\n%s", seen)
			}
		})
	}
}

// nopWriteCloser lets an in-process server's Close leave the pipe to its
// Host.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// sdkRun is an in-process Go SDK server with one tool, for Config.Run.
func sdkRun(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "inproc", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from Go"}}}, nil, nil
	})
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
}

// Config.Run serves Go code as the child, in both eras, with no process.
func TestRunInProcess(t *testing.T) {
	for _, v := range sdkVersions[:2] {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := startBridge(t, Config{Run: sdkRun}, "unused")
			cs := connectSDK(t, ctx, b.URL, v.version, nil)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello"})
			if err != nil || toolText(t, res) != "hello from Go" {
				t.Fatalf("CallTool(hello) = %v, %v", res, err)
			}
		})
	}
}

// Close while the era probe runs stops the sibling the probe would have
// adopted (goleak in TestMain sees its reader goroutines otherwise).
func TestCloseDuringProbe(t *testing.T) {
	h, err := New(Config{Command: commandFor(bins["memos"]), TerminateDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	h.Close()
}
