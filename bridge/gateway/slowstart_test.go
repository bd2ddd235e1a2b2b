package gateway

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server of the file whose child needs 12 s to start serves a 2026-07-28
// client on its route as soon as it answers (within 17 s of the start),
// with the default start timeout; its /readyz says 503, then 200.
func TestGatewaySlowServerRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a child 12 s slow to start; scripts/test.sh --quick leaves it to the full run")
	}
	file := fmt.Sprintf(`{"mcpServers": {"slow": {"command": %q, "args": ["-start-delay", "12s"]}}}`, bins["memos"])
	began := time.Now()
	gw := startGateway(t, file)
	ready := gw.URL + "/servers/slow/readyz"
	resp, err := http.Get(ready)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s while the child starts: %d, want 503", ready, resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+Path("slow"), "")
	callOK(t, ctx, cs, probes["memos"])
	took := time.Since(began)
	t.Logf("first 2026-07-28 call on the route answered %v after start", took.Round(time.Millisecond))
	if took > 17*time.Second {
		t.Errorf("answered %v after start, want within 17s", took)
	}
	resp, err = http.Get(ready)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s after the child answered: %d", ready, resp.StatusCode)
	}
}

// mcpBridge.servers.<name>.childStartTimeout is that server's start
// timeout.
func TestServerChildStartTimeout(t *testing.T) {
	file := parse(t, `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}, "mcpBridge": {"servers": {"a": {"childStartTimeout": "2m"}}}}`)
	g := &Gateway{}
	g.cfg.Base.ChildStartTimeout = 30 * time.Second
	if got := g.serverConfig(file, file.Servers["a"]).ChildStartTimeout; got != 2*time.Minute {
		t.Errorf("a: %v, want 2m", got)
	}
	if got := g.serverConfig(file, file.Servers["b"]).ChildStartTimeout; got != 30*time.Second {
		t.Errorf("b: %v, want the command line's 30s", got)
	}
}

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
