package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetServers changes a running session's servers without ending it: an
// added server joins (list_changed, its tools listed and callable), a
// removed one leaves (list_changed, its tools gone and no longer
// callable), a restarted one is dialed again, and a server neither added
// nor removed keeps its connection.
func TestSetServersKeepsSession(t *testing.T) {
	alpha, beta := newPipeServer("alpha", nil), newPipeServer("beta", nil)
	textTool(alpha.srv, "alpha", "a")
	textTool(beta.srv, "beta", "b")
	var alphaDials atomic.Int32
	as := alpha.server("alpha")
	dial := as.Dial
	as.Dial = func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		alphaDials.Add(1)
		return dial(ctx)
	}
	h := newHarness(t, Config{Servers: []Server{as}, JoinTimeout: 2 * time.Second})
	changed := make(chan struct{}, 8)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_a"}) {
		t.Fatalf("tools = %v", got)
	}

	if err := h.agg.SetServers([]Server{as, beta.server("beta")}, nil); err != nil {
		t.Fatal(err)
	}
	waitOne(t, changed)
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_a", "beta_b"}) {
		t.Fatalf("after adding beta: tools = %v", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_b", Arguments: map[string]any{"text": "x"}})
	if err != nil || resultText(t, res) != "beta:b:x" {
		t.Fatalf("beta_b: %v", err)
	}
	if n := alphaDials.Load(); n != 1 {
		t.Errorf("alpha was dialed %d times; it was neither added nor restarted", n)
	}

	if err := h.agg.SetServers([]Server{beta.server("beta")}, nil); err != nil {
		t.Fatal(err)
	}
	waitOne(t, changed)
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"beta_b"}) {
		t.Fatalf("after removing alpha: tools = %v", got)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_a", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Error("the removed alpha_a was still callable")
	}

	// Restarting beta: it leaves and joins again, and still answers.
	if err := h.agg.SetServers([]Server{beta.server("beta")}, []string{"beta"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_b", Arguments: map[string]any{"text": "y"}})
		if err == nil && !res.IsError && resultText(t, res) == "beta:b:y" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("beta never answered after its restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling the session's routing, not syncing goroutines
	}
}

// A server that fails to start is tried again and joins the session when
// it starts: it is not left out for the session's life.
func TestFailedStartRetried(t *testing.T) {
	alpha, flaky := newPipeServer("alpha", nil), newPipeServer("flaky", nil)
	textTool(alpha.srv, "alpha", "a")
	textTool(flaky.srv, "flaky", "f")
	fs := flaky.server("flaky")
	dial := fs.Dial
	var tries atomic.Int32
	fs.Dial = func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		if tries.Add(1) == 1 {
			return nil, nil, nil, errors.New("not yet")
		}
		return dial(ctx)
	}
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), fs}, JoinTimeout: 10 * time.Second})
	// flaky's failed dial counts as joined at once, so the join waits only for
	// alpha: a wide JoinTimeout keeps a slow alpha (a loaded machine) from
	// joining late, and flaky still comes only with the retry (1 s).
	changed := make(chan struct{}, 8)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	waitOne(t, changed)
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_a", "flaky_f"}) {
		t.Fatalf("after the retry: tools = %v", got)
	}
	if n := tries.Load(); n != 2 {
		t.Errorf("flaky was dialed %d times, want 2", n)
	}
}

// waitOne waits for one value on ch, failing the test after waitFor.
func waitOne(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatal("no list_changed")
	}
}

// An answer of the aggregate's own over the message limit (a list merged
// from servers whose lists are each under it) becomes an error for that
// request at once, and the session goes on.
func TestMergedAnswerOverLimit(t *testing.T) {
	alpha, beta := newPipeServer("alpha", nil), newPipeServer("beta", nil)
	for i := range 4 {
		alpha.srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("a%d", i), Description: strings.Repeat("x", 300), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("a"), nil })
		beta.srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("b%d", i), Description: strings.Repeat("y", 300), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("b"), nil })
	}
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}, MaxMessageSize: 2000})
	c := h.raw()
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	m := c.next()
	e, _ := m["error"].(map[string]any)
	if m["id"] != float64(7) || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "message limit") {
		t.Fatalf("tools/list over the limit: %v, want an error for id 7", m)
	}
	c.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if m := c.next(); m["id"] != float64(8) {
		t.Fatalf("after the error: %v", m)
	}
}
