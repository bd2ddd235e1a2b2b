package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var versions = []struct{ name, version string }{{"modern", ""}, {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}}

// Every enabled server answers at its own route in both eras: two stdio
// servers and a remote one reached through an in-process connect.Bridge
// with the header from ${GW_REMOTE_TOKEN}; the token is in no log.
func TestGatewayServesEveryServer(t *testing.T) {
	gw := startGateway(t, configJSON(remoteServer(t), ""))
	for _, v := range versions {
		for name, tool := range probes {
			t.Run(v.name+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cs := connectSDK(t, ctx, gw.URL+Path(name), v.version)
				found := false
				for tl, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					found = found || tl.Name == tool
				}
				if !found {
					t.Fatalf("tools/list of %s lacks %s", name, tool)
				}
				out := callOK(t, ctx, cs, tool)
				if name == "remote" && out != "remote" {
					t.Fatalf("whereami = %q", out)
				}
			})
		}
	}
	if strings.Contains(gw.log.String(), remoteToken) {
		t.Error("the remote server's token appears in the logs")
	}
}

// A disabled server's route and an unknown one are 404 with a JSON-RPC
// error body; the gateway's /healthz and /readyz answer.
func TestGatewayNotFound(t *testing.T) {
	gw := startGateway(t, configJSON("http://127.0.0.1:1/mcp", ""))
	for path, want := range map[string]string{
		Path("off"):               "MCP server off is disabled",
		Path("nope"):              "no MCP server named nope",
		"/servers/memos/other":    "no MCP endpoint at this path",
		"/something":              "no MCP endpoint at this path",
		"/servers//mcp":           "no MCP endpoint at this path",
		"/servers/off/readyz":     "MCP server off is disabled",
		"/servers/memos/mcp/more": "no MCP endpoint",
		AggregatePath:             "the aggregated endpoint is off",
	} {
		resp, err := http.Post(gw.URL+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code    int
				Message string
			}
		}
		decode(t, resp.Body, &body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body.Error.Message, want) {
			t.Errorf("POST %s = %d %q, want 404 %q", path, resp.StatusCode, body.Error.Message, want)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(gw.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d", p, resp.StatusCode)
		}
	}
	waitReady(t, gw.URL+"/servers/memos/readyz")
}

// A denied tool is neither listed nor callable.
func TestGatewayDeniedTool(t *testing.T) {
	gw := startGateway(t, configJSON("http://127.0.0.1:1/mcp", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range versions[:2] {
		cs := connectSDK(t, ctx, gw.URL+Path("everything"), v.version)
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tl.Name == "test_simple_text" || tl.Name == "test_image_content" {
				t.Errorf("%s: denied tool %s listed", v.name, tl.Name)
			}
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
		if err == nil || !strings.Contains(err.Error(), "is not available") {
			t.Errorf("%s: CallTool(denied) = %v", v.name, err)
		}
		callOK(t, ctx, cs, "test_tool_with_logging")
	}
}

// Killing one server's child leaves the other routes answering, and the
// killed server comes back by itself.
func TestGatewayCrashIsolated(t *testing.T) {
	gw := startGateway(t, configJSON(remoteServer(t), ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	memos := connectSDK(t, ctx, gw.URL+Path("memos"), "")
	var stats struct{ Pid int }
	if err := json.Unmarshal([]byte(callOK(t, ctx, memos, "memo_debug_stats")), &stats); err != nil || stats.Pid == 0 {
		t.Fatalf("memo_debug_stats: %v", err)
	}
	others := map[string]*mcp.ClientSession{}
	for _, name := range []string{"everything", "remote"} {
		others[name] = connectSDK(t, ctx, gw.URL+Path(name), "2025-11-25")
		callOK(t, ctx, others[name], probes[name])
	}
	proc, err := os.FindProcess(stats.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for name, cs := range others {
		t0 := time.Now()
		callOK(t, ctx, cs, probes[name]) // the same sessions still work
		t.Logf("%s answered %v after memos' child was killed (call took %v)", name, time.Since(killed).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	}
	// memos is restarted by its supervisor: a new pid answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := memos.CallTool(ctx, &mcp.CallToolParams{Name: "memo_debug_stats", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			var now struct{ Pid int }
			json.Unmarshal([]byte(toolText(res)), &now)
			if now.Pid != 0 && now.Pid != stats.Pid {
				t.Logf("memos answered from a restarted child %v after the kill", time.Since(killed).Round(time.Millisecond))
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("memos did not come back: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling the restarted server, not syncing goroutines
	}
}

// A server whose command cannot start costs only its own route: it is not
// ready and a session's initialize gets serve's 503 with the reason, while
// the gateway is ready and the other servers answer.
func TestGatewayBrokenServer(t *testing.T) {
	gw := startGateway(t, configJSON("http://127.0.0.1:1/mcp", `, "broken": {"command": "/nonexistent/mcp-server"}`))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	callOK(t, ctx, connectSDK(t, ctx, gw.URL+Path("memos"), ""), probes["memos"])
	for _, p := range []string{"/readyz", "/servers/broken/readyz"} {
		resp, err := http.Get(gw.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"/readyz": 200, "/servers/broken/readyz": 503}[p]; resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", p, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequest("POST", gw.URL+Path("broken"), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Not ready rather than failed: the command may be installed later
	// (it is looked up at each start), and the probe is retried.
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "no such file") {
		t.Errorf("initialize at the broken server: %d %s, want 503 + Retry-After and the reason", resp.StatusCode, body)
	}
	callOK(t, ctx, connectSDK(t, ctx, gw.URL+Path("everything"), "2025-11-25"), probes["everything"])
}
