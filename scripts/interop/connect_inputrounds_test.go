//go:build interop

package interop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer collects a child's stderr written from the exec package's
// copying goroutine while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// (#21 item 1) The Go SDK client, speaking 2026-07-28, → mcp-bridge connect
// → the go-sdk conformance everything-server, stateful (2025 sessions
// only, so connect translates), calling test_input_required_result_multiple_inputs:
// the server sends elicitation, sampling and roots/list at once on the
// call's stream, and connect turns them into input rounds while it is
// answering the previous one. 60 runs, each a fresh connect process with
// three such calls at once; before the fix connect panicked (close of
// closed channel) in 23 of these 60 runs (and in 5 of 77 single-call runs
// of the report). Every call must complete, and
// no connect log may show a panic or a data race.
func TestConnectGoSDKMultipleInputsRuns(t *testing.T) {
	_, addr := startDirect(t, "everything-server-http", func(addr string) []string {
		return []string{env.everything, "-http", addr, "-stateless=false"}
	})
	url := "http://" + addr + "/mcp"
	const runs, calls = 60, 3
	var failed, panicked int
	for run := range runs {
		log, err := multipleInputsRun(url, calls)
		if strings.Contains(log, "panic:") || strings.Contains(log, "WARNING: DATA RACE") {
			panicked++
			if panicked == 1 {
				checkLogClean(t, fmt.Sprintf("mcp-bridge connect (run %d)", run), log)
			}
		}
		if err != nil {
			if failed++; failed <= 3 {
				t.Errorf("run %d: %v\nconnect log:\n%s", run, err, tail(log, 30))
			}
		}
	}
	t.Logf("%d runs of %d concurrent calls: %d failed, %d connect logs with a panic or data race", runs, calls, failed, panicked)
	if panicked > 0 {
		t.Errorf("connect panicked or raced in %d of %d runs", panicked, runs)
	}
}

// multipleInputsRun starts connect for url as a Go SDK client's stdio
// server and makes calls concurrent calls of the multiple-inputs tool.
func multipleInputsRun(url string, calls int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr lockedBuffer
	cmd := exec.Command(env.bridge, "connect", "--log-level", "info", url)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop", Content: &mcp.TextContent{Text: "Hello"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///interop", Name: "interop"})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		return stderr.String(), fmt.Errorf("connect: %w", err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		cs.Close()
		return stderr.String(), fmt.Errorf("negotiated %q, want 2026-07-28", v)
	}
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_multiple_inputs", Arguments: map[string]any{}})
			switch {
			case err != nil:
				errs <- err
			case res.IsError || !strings.Contains(toolText(res), "octocat — 1 root(s) visible"):
				errs <- fmt.Errorf("result %q (error %v)", toolText(res), res.IsError)
			}
		})
	}
	wg.Wait()
	close(errs)
	cs.Close()
	for err := range errs {
		return stderr.String(), err
	}
	return stderr.String(), nil
}

func toolText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}
