package gateway

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server slow to start (12 s) does not make the aggregate unusable: a
// new 2025 session and a 2026-07-28 client are answered with the other
// servers' tools at once, and the slow one joins when it is ready (the
// 2025 session is told with list_changed).
func TestAggregateSlowServerJoins(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the slow server is a POSIX shell line")
	}
	if testing.Short() {
		t.Skip("waits for a 12 s start")
	}
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "slow": {"command": "sh", "args": ["-c", "sleep 12; exec \"$0\"", %q]}},
  "mcpBridge": {"aggregate": true, "joinTimeout": "1s"}}`, bins["memos"], bins["memos"])
	gw := startGateway(t, file)
	waitReady(t, gw.URL+"/servers/memos/readyz")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	changed := make(chan struct{}, 8)
	legacy, err := mcp.NewClient(&mcp.Implementation{Name: "slow-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	callOK(t, ctx, legacy, "memos_"+probes["memos"])
	modern := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	callOK(t, ctx, modern, "memos_"+probes["memos"])
	took := time.Since(start)
	t.Logf("both eras served memos %d ms after start, the slow server still starting", took.Milliseconds())
	if took > 8*time.Second {
		t.Errorf("the others were served after %v: the slow server held the aggregate up", took)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the slow server never joined the 2025 session")
	}
	t.Logf("the slow server joined %d ms after start", time.Since(start).Milliseconds())
	callOK(t, ctx, legacy, "slow_"+probes["memos"])
	for !toolNames(t, ctx, modern)["slow_"+probes["memos"]] {
		if ctx.Err() != nil {
			t.Fatal("the slow server never joined the 2026-07-28 clients' aggregate")
		}
		time.Sleep(100 * time.Millisecond) // polling the endpoint's list, not syncing goroutines
	}
	callOK(t, ctx, modern, "slow_"+probes["memos"])
	t.Logf("2026-07-28 clients see it %d ms after start", time.Since(start).Milliseconds())
}
