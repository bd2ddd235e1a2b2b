package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

var bins = map[string]string{}

func TestMain(m *testing.M) {
	testmain.Run(m, map[string]string{
		"everything": "github.com/modelcontextprotocol/go-sdk/conformance/everything-server",
		"memos":      "./examples/memos",
	}, func(b map[string]string) { bins = b })
}

// remoteToken is what the remote test server demands; the config names it
// only as ${GW_REMOTE_TOKEN}.
const remoteToken = "remote-secret-7d1f"

// remoteServer is a Go SDK Streamable HTTP server that refuses requests
// without the bearer token.
func remoteServer(t *testing.T) string {
	srv := peerServer("remote")
	return tokenPeer(t, srv, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)) + "/mcp"
}

// peerServer is a Go SDK server with one tool, whereami, answering name.
func peerServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whereami"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
	return srv
}

// tokenPeer serves h (srv's transport) behind the bearer token and
// returns its base URL.
func tokenPeer(t *testing.T, srv *mcp.Server, h http.Handler) string {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+remoteToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		// A session the bridge did not get to DELETE (a test that ended
		// first) keeps its reader in the SDK server: end them with it.
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return ts.URL
}

// configJSON is the test file: two stdio servers, a remote one, a
// disabled one, and a tool filter on "everything".
func configJSON(remoteURL string, extra string) string {
	return fmt.Sprintf(`{
  "mcpServers": {
    "memos": {"command": %q, "autoApprove": []},
    "everything": {"command": %q, "timeout": 30},
    "remote": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${GW_REMOTE_TOKEN}"}},
    "off": {"command": "no-such-command", "disabled": true}%s
  },
  "mcpBridge": {"servers": {"everything": {"tools": {"deny": ["test_simple_text", "test_image_*"]}}}}
}`, bins["memos"], bins["everything"], remoteURL, extra)
}

func lookup(k string) (string, bool) {
	if k == "GW_REMOTE_TOKEN" {
		return remoteToken, true
	}
	return "", false
}

type testGateway struct {
	*Gateway
	URL string
	log *testmain.SyncBuffer
}

func parse(t *testing.T, file string) *teamconfig.Config {
	t.Helper()
	cfg, err := teamconfig.Parse([]byte(file), lookup)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func startGateway(t *testing.T, file string) *testGateway {
	t.Helper()
	return startGatewayWith(t, file, serve.Config{})
}

// startGatewayWith serves file with base as every server's starting
// serve.Config.
func startGatewayWith(t *testing.T, file string, base serve.Config) *testGateway {
	t.Helper()
	return startGatewayCfg(t, file, Config{Base: base})
}

// startGatewayCfg serves file with cfg (its Base's logger, delays and
// RetireTimeout set for tests).
func startGatewayCfg(t *testing.T, file string, cfg Config) *testGateway {
	t.Helper()
	base := cfg.Base
	logs := &testmain.SyncBuffer{}
	log := zerolog.New(io.MultiWriter(logs, testmain.TestLog{T: t})).Level(zerolog.DebugLevel)
	base.Logger, base.TerminateDelay, base.RestartBackoff = log, 500*time.Millisecond, 20*time.Millisecond
	cfg.Base, cfg.RetireTimeout, cfg.Logger = base, 5*time.Second, log
	g, err := New(cfg, parse(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		g.BeginShutdown()
		srv.CloseClientConnections()
		g.Close()
		srv.Close()
	})
	return &testGateway{Gateway: g, URL: srv.URL, log: logs}
}

// waitReady polls a server's readiness endpoint.
func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint, not syncing goroutines
	}
}

func connectSDK(t *testing.T, ctx context.Context, url, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%s, %q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// callOK calls a tool and fails the test unless it answers.
func callOK(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s): tool error %s", tool, toolText(res))
	}
	return toolText(res)
}

// A tool of each server, and what it answers.
var probes = map[string]string{"memos": "auth_get_current_user", "everything": "test_tool_with_logging", "remote": "whereami"}

func decode(t *testing.T, r io.Reader, v any) {
	t.Helper()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatal(err)
	}
}
