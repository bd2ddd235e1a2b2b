package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The aggregated /mcp lists <server>_<tool> of every server minus denied
// tools and calls a tool of each, in both eras; a reload that adds a
// server shows its tools to new sessions.
func TestGatewayAggregate(t *testing.T) {
	remote := remoteServer(t)
	file := strings.Replace(configJSON(remote, ""), `"mcpBridge": {`, `"mcpBridge": {"aggregate": true, `, 1)
	gw := startGateway(t, file)
	for _, v := range versions[:2] {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectSDK(t, ctx, gw.URL+AggregatePath, v.version)
			names := map[string]bool{}
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names[tl.Name] = true
			}
			for server, tool := range probes {
				if !names[server+"_"+tool] {
					t.Errorf("aggregated tools/list lacks %s_%s", server, tool)
				}
			}
			for _, denied := range []string{"everything_test_simple_text", "everything_test_image_content"} {
				if names[denied] {
					t.Errorf("aggregated tools/list shows the denied %s", denied)
				}
			}
			for server, tool := range probes {
				out := callOK(t, ctx, cs, server+"_"+tool)
				if server == "remote" && out != "remote" {
					t.Errorf("remote_whereami = %q", out)
				}
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything_test_simple_text"}); err == nil {
				t.Error("the denied tool was callable through the aggregated endpoint")
			}
		})
	}

	next := strings.Replace(configJSON(remote, fmt.Sprintf(`, "memos2": {"command": %q}`, bins["memos"])), `"mcpBridge": {`, `"mcpBridge": {"aggregate": true, `, 1)
	if _, err := gw.Reload(parse(t, next)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	for !toolNames(t, ctx, cs)["memos2_auth_get_current_user"] {
		if ctx.Err() != nil {
			t.Fatal("memos2 never joined the aggregate")
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint's list, not syncing goroutines
	}
	callOK(t, ctx, cs, "memos2_auth_get_current_user")
}
