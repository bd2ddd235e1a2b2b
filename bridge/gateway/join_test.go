package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// mcpBridge.joinTimeout reaches the aggregated endpoint: with a remote
// server that never answers, a client's initialize is answered after the
// file's 300 ms, not the aggregate's default 5 s, and lists the servers
// that are ready.
func TestGatewayAggregateJoinTimeout(t *testing.T) {
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(release)
	file := fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "stuck": {"type": "http", "url": %q}},
  "mcpBridge": {"aggregate": true, "joinTimeout": "300ms"}}`, bins["memos"], stuck.URL+"/mcp")
	gw := startGateway(t, file)
	// memos started and answering first: the 300 ms are the stuck server's
	// to miss, not a loaded machine's to spend starting memos.
	waitReady(t, gw.URL+"/servers/memos/readyz")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cs := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	took := time.Since(start)
	t.Logf("initialize answered in %d ms (joinTimeout 300 ms)", took.Milliseconds())
	if took >= 4*time.Second {
		t.Errorf("initialize took %v: the file's joinTimeout (300ms) was not applied (default 5s)", took)
	}
	// A memos slower than 300 ms to join (a loaded machine) joins late
	// with list_changed: the list is read until it has memos.
	names := toolNames(t, ctx, cs)
	for !names["memos_"+probes["memos"]] {
		if ctx.Err() != nil {
			t.Fatalf("the aggregated tools/list lacks memos_%s: %v", probes["memos"], names)
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint's list, not syncing goroutines
		names = toolNames(t, ctx, cs)
	}
	for name := range names {
		if strings.HasPrefix(name, "stuck_") {
			t.Errorf("a tool of the server that never answered: %s", name)
		}
	}
}
