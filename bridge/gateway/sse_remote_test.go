package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseRemoteServer is a Go SDK server on the legacy HTTP+SSE transport
// (2024-11-05) that demands the bearer token; it returns its SSE URL.
func sseRemoteServer(t *testing.T) string {
	srv := peerServer("sse remote")
	return tokenPeer(t, srv, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)) + "/sse"
}

// A "type": "sse" remote entry is proxied at /servers/<name>/mcp and in
// the aggregate, toward clients of either era.
func TestGatewaySSERemote(t *testing.T) {
	file := fmt.Sprintf(`{
  "mcpServers": {
    "old": {"type": "sse", "url": %q, "headers": {"Authorization": "Bearer ${GW_REMOTE_TOKEN}"}},
    "memos": {"command": %q}
  },
  "mcpBridge": {"aggregate": true}
}`, sseRemoteServer(t), bins["memos"])
	gw := startGateway(t, file)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectSDK(t, ctx, gw.URL+Path("old"), v.version)
			if out := callOK(t, ctx, cs, "whereami"); out != "sse remote" {
				t.Errorf("whereami = %q", out)
			}
			agg := connectSDK(t, ctx, gw.URL+AggregatePath, v.version)
			found := false
			for tl, err := range agg.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				found = found || strings.HasSuffix(tl.Name, "whereami")
			}
			if !found {
				t.Fatal("the aggregate lacks the SSE remote's tool")
			}
			if out := callOK(t, ctx, agg, "old_whereami"); out != "sse remote" {
				t.Errorf("old_whereami through the aggregate = %q", out)
			}
		})
	}
	if strings.Contains(gw.log.String(), remoteToken) {
		t.Error("the remote server's token appears in the logs")
	}
}
