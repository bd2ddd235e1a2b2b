//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// (issue 12) serve --config: examples/memos and server-everything (stdio),
// the Go SDK server over HTTP (a remote entry, its header from
// ${INTEROP_TEAMS_TOKEN}), and a disabled entry. Each /servers/<name>/mcp
// works with the TS SDK v1 client, the TS v2 client pinned to 2026-07-28
// and the Go SDK client; the disabled one is 404; server-everything's
// denied get-env is neither listed nor callable. The aggregated /mcp lists
// <server>_<tool> of all three (minus get-env) and calls a tool of each,
// for the same three clients.
func TestTeamsConfigServers(t *testing.T) {
	remote, _ := goSDKStateless(t, false)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"memos":      map[string]any{"command": env.memos, "autoApprove": []string{}},
			"everything": map[string]any{"command": serverEverythingStdio()[0], "args": serverEverythingStdio()[1:], "timeout": 60000},
			"remote":     map[string]any{"type": "http", "url": remote, "headers": map[string]string{"X-Team-Token": "${INTEROP_TEAMS_TOKEN}"}},
			"retired":    map[string]any{"command": "no-such-server", "disabled": true},
		},
		// server-everything is legacy-only; saying so spares the era probe,
		// which a slow Node start on a loaded machine can outlast.
		"mcpBridge": map[string]any{"aggregate": true, "servers": map[string]any{"everything": map[string]any{
			"childProtocol": "legacy", "tools": map[string]any{"deny": []string{"get-env"}}}}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	br := startBridge(t, serveOpts{Flags: []string{"--config", file}, Env: []string{"INTEROP_TEAMS_TOKEN=teams-interop-token"}})
	url := func(name string) string { return br.base + "/servers/" + name + "/mcp" }

	tools := map[string]struct{ tool, args, want string }{
		"memos":      {"auth_get_current_user", `{}`, "users/1"},
		"everything": {"echo", `{"message":"teams"}`, "Echo: teams"},
		"remote":     {"echo", `{"message":"teams"}`, "Echo: teams"},
	}
	for _, name := range []string{"memos", "everything", "remote"} {
		tc := tools[name]
		t.Run(name, func(t *testing.T) {
			r := runDriver(t, "ts-v1-client.mjs", "--url", url(name), "--list", "--call", tc.tool, "--args", tc.args)
			if c := step[callStep](t, r, "call"); !strings.Contains(c.Text, tc.want) {
				t.Errorf("TS v1 %s: %s returned %q", name, tc.tool, c.Text)
			}
			checkDenied(t, name, step[listStep](t, r, "listTools").Names)

			r = runDriver(t, "ts-v2-client.mjs", "--url", url(name), "--expect-version", "2026-07-28", "--list", "--call", tc.tool, "--args", tc.args)
			checkModern(t, r)
			if c := step[callStep](t, r, "call"); !strings.Contains(c.Text, tc.want) {
				t.Errorf("TS v2 %s: %s returned %q", name, tc.tool, c.Text)
			}
			checkDenied(t, name, step[listStep](t, r, "listTools").Names)

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url(name), MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("Go SDK Connect: %v", err)
			}
			defer cs.Close()
			var args map[string]any
			json.Unmarshal([]byte(tc.args), &args)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("Go SDK %s: %v %+v", tc.tool, err, res)
			}
			if tx, _ := res.Content[0].(*mcp.TextContent); tx == nil || !strings.Contains(tx.Text, tc.want) {
				t.Errorf("Go SDK %s: %s returned %+v", name, tc.tool, res.Content)
			}
			if name == "everything" {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "is not available") {
					t.Errorf("the denied get-env was callable: %v", err)
				}
			}
		})
	}

	t.Run("aggregate", func(t *testing.T) {
		agg := br.base + "/mcp"
		for _, name := range []string{"memos", "everything", "remote"} {
			tc := tools[name]
			r := runDriver(t, "ts-v1-client.mjs", "--url", agg, "--list", "--call", name+"_"+tc.tool, "--args", tc.args)
			checkAggregated(t, "TS v1", step[listStep](t, r, "listTools").Names)
			if c := step[callStep](t, r, "call"); !strings.Contains(c.Text, tc.want) {
				t.Errorf("TS v1 /mcp: %s_%s returned %q", name, tc.tool, c.Text)
			}
			r = runDriver(t, "ts-v2-client.mjs", "--url", agg, "--expect-version", "2026-07-28", "--list", "--call", name+"_"+tc.tool, "--args", tc.args)
			checkModern(t, r)
			checkAggregated(t, "TS v2", step[listStep](t, r, "listTools").Names)
			if c := step[callStep](t, r, "call"); !strings.Contains(c.Text, tc.want) {
				t.Errorf("TS v2 /mcp: %s_%s returned %q", name, tc.tool, c.Text)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: agg, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("Go SDK Connect /mcp: %v", err)
		}
		defer cs.Close()
		for _, name := range []string{"memos", "everything", "remote"} {
			tc := tools[name]
			var args map[string]any
			json.Unmarshal([]byte(tc.args), &args)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name + "_" + tc.tool, Arguments: args})
			if err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("Go SDK /mcp %s_%s: %v %+v", name, tc.tool, err, res)
			}
			if tx, _ := res.Content[0].(*mcp.TextContent); tx == nil || !strings.Contains(tx.Text, tc.want) {
				t.Errorf("Go SDK /mcp %s_%s returned %+v", name, tc.tool, res.Content)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything_get-env", Arguments: map[string]any{}}); err == nil {
			t.Error("the denied everything_get-env was callable through /mcp")
		}
	})

	resp, err := http.Post(url("retired"), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("disabled server: %d, want 404", resp.StatusCode)
	}
	if strings.Contains(br.log(), "teams-interop-token") {
		t.Error("the remote entry's header value appears in the bridge's log")
	}
}

// checkAggregated: the aggregated list has a tool of each server and not
// the denied one.
func checkAggregated(t *testing.T, client string, names []string) {
	t.Helper()
	for _, want := range []string{"memos_auth_get_current_user", "everything_echo", "remote_echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s /mcp: tools/list lacks %s: %q", client, want, names)
		}
	}
	if slices.Contains(names, "everything_get-env") {
		t.Errorf("%s /mcp: the denied everything_get-env is listed", client)
	}
}

func checkDenied(t *testing.T, server string, names []string) {
	t.Helper()
	if len(names) == 0 {
		t.Errorf("%s: tools/list is empty", server)
	}
	if server == "everything" && slices.Contains(names, "get-env") {
		t.Errorf("everything: the denied get-env is listed")
	}
}
