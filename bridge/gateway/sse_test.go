package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
)

// The HTTP+SSE transport (2024-11-05) is offered per server at
// /servers/<name>/sse and on the aggregate at /sse, each with its message
// path next to it; with it turned off (serve.Config.NoSSE) the paths are
// 404.
func TestGatewaySSE(t *testing.T) {
	remote := remoteServer(t)
	file := strings.Replace(configJSON(remote, ""), `"mcpBridge": {`, `"mcpBridge": {"aggregate": true, `, 1)
	gw := startGateway(t, file)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(path string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "sse-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: gw.URL + path}, &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
		if err != nil {
			t.Fatalf("Connect(%s): %v", path, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect("/servers/memos/sse")
	callOK(t, ctx, cs, probes["memos"])
	agg := connect("/sse")
	for server, tool := range probes {
		callOK(t, ctx, agg, server+"_"+tool)
	}

	off := startGatewayWith(t, configJSON(remote, ""), serve.Config{NoSSE: true})
	resp, err := http.Get(off.URL + "/servers/memos/sse")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /servers/memos/sse with the transport off: %d, want 404", resp.StatusCode)
	}
}
