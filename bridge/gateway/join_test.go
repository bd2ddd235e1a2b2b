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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cs := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	took := time.Since(start)
	t.Logf("initialize answered in %d ms (joinTimeout 300 ms)", took.Milliseconds())
	if took >= 4*time.Second {
		t.Errorf("initialize took %v: the file's joinTimeout (300ms) was not applied (default 5s)", took)
	}
	found := false
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(tl.Name, "stuck_") {
			t.Errorf("a tool of the server that never answered: %s", tl.Name)
		}
		found = found || tl.Name == "memos_"+probes["memos"]
	}
	if !found {
		t.Errorf("the aggregated tools/list lacks memos_%s", probes["memos"])
	}
}
