package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

func debugPid(t *testing.T, ctx context.Context, cs *mcp.ClientSession) int {
	t.Helper()
	var stats struct{ Pid int }
	if err := json.Unmarshal([]byte(callOK(t, ctx, cs, "memo_debug_stats")), &stats); err != nil || stats.Pid == 0 {
		t.Fatalf("memo_debug_stats: %v", err)
	}
	return stats.Pid
}

// Reload starts an added server, stops a removed one, restarts a changed
// one with its new settings, and leaves an unchanged one alone: its open
// 2025 session goes on with the same child.
func TestGatewayReload(t *testing.T) {
	remote := remoteServer(t)
	gw := startGateway(t, configJSON(remote, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	memos := connectSDK(t, ctx, gw.URL+Path("memos"), "2025-11-25")
	pid := debugPid(t, ctx, memos)
	callOK(t, ctx, connectSDK(t, ctx, gw.URL+Path("everything"), ""), "test_tool_with_logging")

	next := strings.Replace(configJSON(remote, fmt.Sprintf(`, "memos2": {"command": %q}`, bins["memos"])),
		`"deny": ["test_simple_text", "test_image_*"]`, `"deny": ["test_tool_with_logging"]`, 1)
	next = strings.Replace(next, `"remote": {`, `"remote": {"disabled": true, `, 1)
	ch, err := gw.Reload(parse(t, next))
	if err != nil {
		t.Fatal(err)
	}
	want := teamconfig.Changes{Added: []string{"memos2"}, Removed: []string{"remote"}, Changed: []string{"everything"}, Unchanged: []string{"memos"}}
	if !reflect.DeepEqual(ch, want) {
		t.Fatalf("Reload = %+v, want %+v", ch, want)
	}
	// The open session on the unchanged server: same session, same child.
	if got := debugPid(t, ctx, memos); got != pid {
		t.Fatalf("memos child changed across the reload: pid %d, was %d", got, pid)
	}
	// The added server serves.
	callOK(t, ctx, connectSDK(t, ctx, gw.URL+Path("memos2"), ""), "auth_get_current_user")
	// The changed server has its new filter.
	_, err = connectSDK(t, ctx, gw.URL+Path("everything"), "").CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "is not available") {
		t.Fatalf("the changed server kept its old filter: %v", err)
	}
	// The removed (now disabled) server is 404.
	resp, err := http.Post(gw.URL+Path("remote"), "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("removed server: %d", resp.StatusCode)
	}
}

// openRoute opens an in-process session at a route, stdio or remote, as
// the caller it is given (here a static token's holder), which the route
// admits by its own tokens as it would an outside client: there is no
// token of the gateway's own, and a token the route does not accept
// opens nothing.
func TestOpenRoute(t *testing.T) {
	gw := startGatewayWith(t, configJSON(remoteServer(t), ""), serve.Config{AuthTokens: []string{"outside-token"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder := &caller{key: "token:x", authorization: "Bearer outside-token", static: true}
	if _, err := gw.openRoute(ctx, "off", holder); err == nil {
		t.Fatal("openRoute(disabled) succeeded")
	}
	if _, err := gw.openRoute(ctx, "memos", &caller{key: "token:y", authorization: "Bearer guessed", static: true}); !errors.Is(err, serve.ErrCallerRefused) {
		t.Fatalf("openRoute with a token the route does not accept: %v", err)
	}
	if _, err := gw.openRoute(ctx, "memos", &caller{}); !errors.Is(err, serve.ErrCallerRefused) {
		t.Fatalf("openRoute without a credential: %v", err)
	}
	for _, name := range []string{"memos", "remote"} {
		conn, err := gw.openRoute(ctx, name, holder)
		if err != nil {
			t.Fatal(err)
		}
		handshake(t, conn)
		call := ask(t, conn, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, probes[name]))
		if res, _ := call["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Fatalf("%s tools/call = %v", name, call)
		}
		if err := conn.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := conn.Recv(new(wire.Message)); err != io.EOF {
			t.Errorf("Recv after Close: %v, want EOF", err)
		}
	}
	resp, err := http.Post(gw.URL+Path("memos"), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("outside request without a token: %d, want 401", resp.StatusCode)
	}
}
