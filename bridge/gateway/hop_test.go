package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
)

// maxAggCallAllocs bounds what one aggregated tools/call allocates in the
// process. Through connect.Bridge and HTTP over a net.Pipe (before
// serve.Handler.Open) it was 369-373 (370-390 with -race): each message
// was encoded as HTTP, parsed by connect, and parsed again by the
// aggregate after its reader had. In-process it was 252 (269 with -race)
// while the route's answers went to the Conn framed as SSE, to be read
// back and parsed again by the aggregate; handed over with the parse the
// route's child reader made (Conn.Recv) it is 248 (265 with -race).
// TestAggregateParsesOncePerDirection counts the parses themselves.
const maxAggCallAllocs = 280

// TestAggregateCallAllocs counts the allocations of one tools/call through
// the aggregated endpoint to a stdio route, in this process (the SDK
// client, the aggregate's Handler and Aggregator, the route's Handler;
// not the child).
func TestAggregateCallAllocs(t *testing.T) {
	file := `{"mcpServers": {"memos": {"command": "` + bins["memos"] + `"}}, "mcpBridge": {"aggregate": true}}`
	g, err := New(Config{Base: serve.Config{Logger: zerolog.Nop()}, Logger: zerolog.Nop()}, parse(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	srv := httptest.NewServer(g)
	defer func() {
		g.BeginShutdown()
		srv.CloseClientConnections()
		g.Close()
		srv.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, srv.URL+AggregatePath, versions[1].version)
	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memos_" + probes["memos"], Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("CallTool: %v", err)
		}
	}
	call()
	const runs = 300
	start := time.Now()
	n := testing.AllocsPerRun(runs, call)
	took := time.Since(start)
	t.Logf("allocations per aggregated tools/call: %.0f; %.0f calls/s one at a time", n, float64(runs+1)/took.Seconds())
	if n > maxAggCallAllocs {
		t.Errorf("one aggregated tools/call allocated %.0f times, want at most %d", n, maxAggCallAllocs)
	}
}

// An aggregated call in flight when the gateway begins to shut down
// finishes, as a request in flight at a route does: the route's session
// loses its standalone stream (BeginShutdown ends those), not the
// session, so the aggregate keeps the server until its calls are
// answered.
func TestAggregateCallFinishesAcrossShutdown(t *testing.T) {
	file := `{"mcpServers": {"memos": {"command": "` + bins["memos"] + `", "args": ["-step-delay", "200ms"]}}, "mcpBridge": {"aggregate": true}}`
	gw := startGateway(t, file)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	progressed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			progressed <- struct{}{}
		},
	})
	// A 2026-07-28 client: it has no standalone stream of its own for
	// BeginShutdown to end.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: versions[0].version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "memos_memo_export_memos", Arguments: map[string]any{"steps": 4}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %s", toolText(res))
		}
		done <- err
	}()
	select {
	case <-progressed:
	case err := <-done:
		t.Fatalf("the call ended before its first progress: %v", err)
	}
	gw.BeginShutdown()
	if err := <-done; err != nil {
		t.Fatalf("the call in flight at BeginShutdown: %v", err)
	}
}

// When a route forgets the aggregate's session (its child was killed, and
// with it the session), the aggregate's connection to the route starts a
// new one by replaying the handshake, as an HTTP client of the route
// must ("MUST start a new session"): the server comes back under the same
// aggregate session, in both the route's session modes.
func TestAggregateRouteSessionRenewed(t *testing.T) {
	for _, mode := range []string{"", `, "mcpBridge": {"aggregate": true, "servers": {"memos": {"sessionMode": "shared"}}}`} {
		name := "own child"
		if mode != "" {
			name = "shared child"
		}
		t.Run(name, func(t *testing.T) {
			file := `{"mcpServers": {"memos": {"command": "` + bins["memos"] + `"}}, "mcpBridge": {"aggregate": true}}`
			if mode != "" {
				file = `{"mcpServers": {"memos": {"command": "` + bins["memos"] + `"}}` + mode + `}`
			}
			gw := startGateway(t, file)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectSDK(t, ctx, gw.URL+AggregatePath, versions[1].version)
			var stats struct{ Pid int }
			if err := json.Unmarshal([]byte(callOK(t, ctx, cs, "memos_memo_debug_stats")), &stats); err != nil || stats.Pid == 0 {
				t.Fatalf("memo_debug_stats: %v", err)
			}
			proc, err := os.FindProcess(stats.Pid)
			if err != nil {
				t.Fatal(err)
			}
			proc.Kill()
			for {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memos_memo_debug_stats", Arguments: map[string]any{}})
				if err == nil && !res.IsError {
					var now struct{ Pid int }
					json.Unmarshal([]byte(toolText(res)), &now)
					if now.Pid != 0 && now.Pid != stats.Pid {
						return
					}
				}
				if ctx.Err() != nil {
					t.Fatalf("memos did not come back in the aggregate session: %v", err)
				}
				time.Sleep(20 * time.Millisecond) // polling the restarted server, not syncing goroutines
			}
		})
	}
}
