//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// (#26) connect --config: one `mcp-bridge connect --config FILE` carries a
// 2025-only remote (server-everything over Streamable HTTP, stateful), a
// 2026-07-28-only remote (the Go SDK restricted to it) and a stdio server
// (examples/memos). A TS SDK v1 host and a Go SDK v1.8.0 host speaking
// 2026-07-28 list <server>_<tool> of all three, call one of each, get
// progress from both remotes and a list_changed from the modern one; the
// entries' deny and allow hide (not listed) and refuse (call errors);
// killing the modern remote leaves the others answering in the open
// session and in a new one.
func TestConnectConfigTSv1AndGoSDKHosts(t *testing.T) {
	everything, _ := serverEverythingHTTP(t)
	modern, modernProc := goSDKStateless(t, true)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"type": "http", "url": everything},
			"modern":     map[string]any{"type": "http", "url": modern, "headers": map[string]string{"X-Team": "ccfg-interop-token"}},
			"memos":      map[string]any{"command": env.memos},
		},
		"mcpBridge": map[string]any{"servers": map[string]any{
			"everything": map[string]any{"tools": map[string]any{"deny": []string{"get-env"}}},
			"modern":     map[string]any{"tools": map[string]any{"allow": []string{"echo", "progress", "toggle_tool", "extra_tool"}}},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// TS SDK v1 host: the 2025 remote's progress tool, then the modern
	// one's, each run its own connect --config process.
	r := runConnectConfig(t, "ts-v1-ccfg-everything", file,
		"--list",
		"--call", "memos_auth_get_current_user", "--args", `{}`,
		"--progress", "--progress-tool", "everything_trigger-long-running-operation", "--progress-args", `{"duration":1,"steps":5}`,
	)
	names := step[listStep](t, r.driverResult, "listTools").Names
	checkCcfgList(t, "TS v1", names)
	if c := step[callStep](t, r.driverResult, "call"); !strings.Contains(c.Text, "users/1") {
		t.Errorf("TS v1: memos_auth_get_current_user returned %q", c.Text)
	}
	checkProgress(t, step[progressStep](t, r.driverResult, "progress"), 1, 5)

	r = runConnectConfig(t, "ts-v1-ccfg-modern", file,
		"--call", "modern_echo", "--args", `{"message":"one entry"}`,
		"--progress", "--progress-tool", "modern_progress", "--progress-args", `{"steps":3}`,
		"--list-changed", "--list-changed-tool", "modern_toggle_tool",
	)
	if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: one entry" {
		t.Errorf("TS v1: modern_echo returned %q", c.Text)
	}
	checkProgress(t, step[progressStep](t, r.driverResult, "progress"), 1, 3)
	if n := r.Summary.Wire.Messages["notifications/tools/list_changed"]; n < 1 {
		t.Errorf("TS v1: no notifications/tools/list_changed re-announced from the modern remote (wire %v)", r.Summary.Wire.Messages)
	}

	// Go SDK host, 2026-07-28.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stderr lockedBuffer
	cmd := exec.Command(env.bridge, "connect", "--config", file, "--log-level", "debug")
	cmd.Stderr = &stderr
	var mu sync.Mutex
	progress := map[string]int{}
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress[fmt.Sprint(req.Params.ProgressToken)]++
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Go SDK Connect: %v\n%s", err, tail(stderr.String(), 30))
	}
	defer func() {
		cs.Close()
		checkLogClean(t, "connect --config (Go SDK host)", stderr.String())
		if t.Failed() {
			t.Logf("connect --config log (Go SDK host):\n%s", tail(stderr.String(), 60))
		}
	}()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("Go SDK host negotiated %q, want 2026-07-28", v)
	}
	names = listUntil(t, ctx, cs, "everything_echo", "modern_echo", "memos_auth_get_current_user")
	checkCcfgList(t, "Go SDK", names)
	call := func(name string, args map[string]any) (string, error) {
		cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
		defer ccancel()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		p.SetProgressToken(name)
		res, err := cs.CallTool(cctx, p)
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", toolText(res))
		}
		return toolText(res), nil
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"everything_echo", map[string]any{"message": "go"}, "Echo: go"},
		{"modern_echo", map[string]any{"message": "go"}, "Echo: go"},
		{"memos_auth_get_current_user", map[string]any{}, "users/1"},
		{"everything_trigger-long-running-operation", map[string]any{"duration": 1, "steps": 4}, "completed"},
		{"modern_progress", map[string]any{"steps": 3}, "progress done: 3 steps"},
	} {
		if got, err := call(c.name, c.args); err != nil || !strings.Contains(got, c.want) {
			t.Errorf("Go SDK %s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// The SDK runs notification handlers apart from the call's result:
	// the last ones may land just after it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		e, m := progress["everything_trigger-long-running-operation"], progress["modern_progress"]
		mu.Unlock()
		if e == 4 && m == 3 {
			break
		}
		if e > 4 || m > 3 || time.Now().After(deadline) {
			t.Errorf("Go SDK progress notifications: %d from everything, %d from modern; want 4 and 3", e, m)
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the SDK's handler goroutines
	}
	for _, name := range []string{"everything_get-env", "modern_ask_name"} {
		if got, err := call(name, map[string]any{}); err == nil {
			t.Errorf("Go SDK: the filtered %s was callable: %q", name, got)
		}
	}

	// The modern remote goes away: its calls fail, the others answer.
	modernProc.stop()
	if got, err := call("modern_echo", map[string]any{"message": "gone"}); err == nil {
		t.Errorf("Go SDK: modern_echo answered %q after its remote was killed", got)
	}
	for _, c := range []struct{ name, want string }{{"everything_echo", "Echo: still"}, {"memos_auth_get_current_user", "users/1"}} {
		args := map[string]any{"message": "still"}
		if c.name == "memos_auth_get_current_user" {
			args = map[string]any{}
		}
		if got, err := call(c.name, args); err != nil || !strings.Contains(got, c.want) {
			t.Errorf("Go SDK %s after the modern remote was killed: %q, %v", c.name, got, err)
		}
	}
	// A new host session with the remote down: the others are listed and
	// answer, the absent one is logged.
	r = runConnectConfig(t, "ts-v1-ccfg-one-down", file,
		"--list",
		"--call", "everything_echo", "--args", `{"message":"one down"}`,
	)
	if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: one down" {
		t.Errorf("TS v1 with the modern remote down: everything_echo returned %q", c.Text)
	}
	if names := step[listStep](t, r.driverResult, "listTools").Names; !slices.Contains(names, "memos_auth_get_current_user") {
		t.Errorf("TS v1 with the modern remote down: memos missing from %q", names)
	}
	if !strings.Contains(r.log, `"server":"modern"`) {
		t.Errorf("the absent remote is not in the log")
	}
	if strings.Contains(r.log+stderr.String(), "ccfg-interop-token") {
		t.Error("an entry's header value appears in the log")
	}
}

// runConnectConfig runs the TS v1 driver with `mcp-bridge connect --config
// FILE` as its stdio server, checked as runConnect checks a single
// connect (clean exit once the host closes stdin, a clean log).
func runConnectConfig(t *testing.T, name, file string, args ...string) *connectRun {
	t.Helper()
	art := artifactDir(t)
	logPath := filepath.Join(art, "connect-"+name+".log")
	_ = os.Remove(logPath)
	argv := append(append([]string(nil), args...), "--stderr-file", logPath, "--command", env.bridge, "--",
		"connect", "--log-level", "debug", "--config", file)
	r, err := execDriver(art, name, "ts-v1-client.mjs", argv...)
	b, _ := os.ReadFile(logPath)
	cr := &connectRun{driverResult: r, log: string(b)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp-bridge connect --config log (%s):\n%s", logPath, tail(cr.log, 60))
		}
	})
	checkDriver(t, "ts-v1-client.mjs", argv, r, err)
	checkLogClean(t, "mcp-bridge connect --config", cr.log)
	if c := r.Summary.Child; !c.clean() {
		t.Errorf("BRIDGE BUG: mcp-bridge connect --config did not exit cleanly once the host closed its stdin: %s", c)
	}
	return cr
}

// checkCcfgList: a tool of each entry is listed under <server>_<tool>, and
// the filtered ones are not.
func checkCcfgList(t *testing.T, host string, names []string) {
	t.Helper()
	for _, want := range []string{"everything_echo", "everything_trigger-long-running-operation", "modern_echo", "modern_progress", "memos_auth_get_current_user"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s: tools/list lacks %s: %q", host, want, names)
		}
	}
	for _, hidden := range []string{"everything_get-env", "modern_ask_name", "modern_sample_progress"} {
		if slices.Contains(names, hidden) {
			t.Errorf("%s: the filtered %s is listed", host, hidden)
		}
	}
}

// listUntil lists tools until every name in want is there (a server slower
// than the aggregate's join timeout joins later), or ctx ends.
func listUntil(t *testing.T, ctx context.Context, cs *mcp.ClientSession, want ...string) []string {
	t.Helper()
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(names, n) }) {
			return names
		}
		select {
		case <-ctx.Done():
			return names
		case <-time.After(250 * time.Millisecond): // polling the aggregate's late joins
		}
	}
}
