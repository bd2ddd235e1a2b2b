package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

const appMIME = "text/html;profile=mcp-app"

// appPeer is a remote MCP App server (SEP-1865) behind the test token: a
// ui://dashboard resource, a tool "show" whose _meta.ui.resourceUri names
// it, and the io.modelcontextprotocol/ui extension.
func appPeer(t *testing.T, name string) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{"io.modelcontextprotocol/ui": map[string]any{}}},
	})
	srv.AddResource(&mcp.Resource{URI: "ui://dashboard", Name: "dashboard", MIMEType: appMIME},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: appMIME, Text: "<html>" + name + " " + req.Params.URI + "</html>"}}}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://dashboard"}}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":show"}}}, nil, nil
		})
	return tokenPeer(t, srv, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)) + "/mcp"
}

// Acceptance of issue #24 (MCP Apps through the aggregate), through a
// configuration file as serve --config reads it: two MCP App servers with
// the same ui://dashboard, "app" with "prefix": false. On the aggregated
// /mcp each dashboard is listed as ui://<server>/dashboard and readable
// (the server's HTML, under the listed URI), each tool's resourceUri is
// its own server's listed URI, and app's tool is callable by its own name.
func TestGatewayAggregateApps(t *testing.T) {
	app, app2 := appPeer(t, "app"), appPeer(t, "app2")
	config := func(servers string) string {
		return fmt.Sprintf(`{"mcpServers": {
    "app": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${GW_REMOTE_TOKEN}"}},
    "app2": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${GW_REMOTE_TOKEN}"}}
  },
  "mcpBridge": {"aggregate": true, "servers": {%s}}}`, app, app2, servers)
	}
	gw := startGateway(t, config(`"app": {"prefix": false}`))
	for _, v := range versions[:2] {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectSDK(t, ctx, gw.URL+AggregatePath, v.version)
			if _, ok := cs.InitializeResult().Capabilities.Extensions["io.modelcontextprotocol/ui"]; !ok {
				t.Errorf("the aggregate does not advertise MCP Apps, which both servers do: %+v", cs.InitializeResult().Capabilities)
			}

			listed := map[string]bool{}
			for r, err := range cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				listed[r.URI] = true
			}
			tools := map[string]string{}
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				ui, _ := tl.Meta["ui"].(map[string]any)
				tools[tl.Name], _ = ui["resourceUri"].(string)
			}
			for tool, server := range map[string]string{"show": "app", "app2_show": "app2"} {
				uri := "ui://" + server + "/dashboard"
				if !listed[uri] {
					t.Errorf("resources/list lacks %s: %v", uri, listed)
				}
				if tools[tool] != uri {
					t.Errorf("tool %s: resourceUri %q, want %q (tools %v)", tool, tools[tool], uri, tools)
				}
				r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("read %s: %v", uri, err)
				}
				if c := r.Contents[0]; c.URI != uri || c.Text != "<html>"+server+" ui://dashboard</html>" || c.MIMEType != appMIME {
					t.Errorf("read %s = %+v", uri, c)
				}
				if out := callOK(t, ctx, cs, tool); out != server+":show" {
					t.Errorf("%s answered %q", tool, out)
				}
			}
			for uri := range listed {
				if !strings.HasPrefix(uri, "ui://") {
					t.Errorf("listed %q: a UI resource left the ui:// scheme", uri)
				}
			}
			if _, ok := tools["app_show"]; ok {
				t.Error(`"prefix": false still exposed app_show`)
			}
		})
	}

	// Both unprefixed: a collision the file shows is refused at load,
	// naming both servers; one it does not show (no allow lists) is left
	// to run time, where show goes to neither server and is logged.
	_, err := teamconfig.Parse([]byte(config(`"app": {"prefix": false, "tools": {"allow": ["show"]}}, "app2": {"prefix": false, "tools": {"allow": ["show"]}}`)), lookup)
	if err == nil || !strings.Contains(err.Error(), `mcpBridge.servers.app: "prefix": false exposes the tool "show" bare, and so does server "app2"`) {
		t.Errorf("a bare collision the allow lists show was not refused at load: %v", err)
	}
	if _, err := gw.Reload(parse(t, config(`"app": {"prefix": false}, "app2": {"prefix": false}`))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	for names := toolNames(t, ctx, cs); !names["app_show"] || !names["app2_show"] || names["show"]; names = toolNames(t, ctx, cs) {
		if ctx.Err() != nil {
			t.Fatalf("after the reload: tools %v, want app_show and app2_show, no show", names)
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint's list, not syncing goroutines
	}
	for _, server := range []string{"app", "app2"} {
		if out := callOK(t, ctx, cs, server+"_show"); out != server+":show" {
			t.Errorf("%s_show answered %q", server, out)
		}
	}
	if !strings.Contains(gw.log.String(), "no server keeps it") {
		t.Error("the run-time collision of show was not logged")
	}
}
