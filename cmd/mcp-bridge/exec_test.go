package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execTools writes a tools file for the probe program (bridge/exec's
// test program): echo_args prints its argv, fail exits 3.
func execTools(t *testing.T) string {
	t.Helper()
	probe, _ := json.Marshal(bin["probe"])
	file := filepath.Join(t.TempDir(), "tools.json")
	body := fmt.Sprintf(`{"tools": {
	  "echo_args": {"description": "print argv", "command": %s, "args": ["argv", "{word}"], "annotations": {"readOnlyHint": true},
	    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}},
	  "fail": {"command": %s, "args": ["exit", "3"]},
	  "flood": {"command": %s, "args": ["flood", "{n}"], "maxOutput": "1MiB",
	    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}}}}`, probe, probe, probe)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// checkExecTools drives exec's tools through an MCP endpoint with the Go
// SDK's client at version ("" is 2026-07-28, stateless).
func checkExecTools(t *testing.T, ctx context.Context, url, version, prefix string) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "exec-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s %q: connect: %v", url, version, err)
	}
	defer cs.Close()
	want := version
	if want == "" {
		want = "2026-07-28"
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Errorf("%s: negotiated %q, want %q", url, got, want)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("%s %q: tools/list: %v", url, version, err)
	}
	found := false
	for _, tl := range tools.Tools {
		if tl.Name == prefix+"echo_args" {
			found = tl.OutputSchema != nil && tl.Annotations != nil && tl.Annotations.ReadOnlyHint
		}
	}
	if !found {
		t.Errorf("%s %q: no %secho_args with outputSchema and annotations in %d tools", url, version, prefix, len(tools.Tools))
	}
	word := "$(id); rm -rf / `x` && echo pwned"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "echo_args", Arguments: map[string]any{"word": word}})
	if err != nil {
		t.Fatalf("%s %q: tools/call: %v", url, version, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	got, _ := json.Marshal([]string{"argv", word})
	if res.IsError || sc["stdout"] != string(got)+"\n" || sc["exitCode"] != float64(0) {
		t.Errorf("%s %q: echo_args: isError %v, structuredContent %v", url, version, res.IsError, sc)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "fail", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s %q: tools/call fail: %v", url, version, err)
	}
	sc, _ = res.StructuredContent.(map[string]any)
	if !res.IsError || sc["exitCode"] != float64(3) {
		t.Errorf("%s %q: fail: isError %v, structuredContent %v", url, version, res.IsError, sc)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "echo_args", Arguments: map[string]any{"word": 5}})
	if err == nil || !strings.Contains(err.Error(), "want string") {
		t.Errorf("%s %q: a schema violation: %v, want the -32602 reason", url, version, err)
	}
}

// serve -- mcp-bridge exec --tools FILE: exec as serve's child, with a
// 2025 client (a session over serve) and a 2026-07-28 client (stateless).
func TestExecThroughServe(t *testing.T) {
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--", bin["mcp-bridge"], "exec", "--tools", execTools(t))
	waitReady(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range []string{"2025-11-25", ""} {
		checkExecTools(t, ctx, "http://"+addr+"/mcp", v, "")
	}
}

// exec as an entry of serve --config: its own endpoint, and the aggregate.
func TestExecInConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "servers.json")
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"cli": map[string]any{
		"command": bin["mcp-bridge"], "args": []string{"exec", "--tools", execTools(t)}}},
		"mcpBridge": map[string]any{"aggregate": true}})
	if err := os.WriteFile(cfg, entry, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--config", cfg)
	waitReady(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range []string{"2025-11-25", ""} {
		checkExecTools(t, ctx, "http://"+addr+"/servers/cli/mcp", v, "")
	}
	// The aggregate names a server's tools after the server (cli_echo_args).
	client := mcp.NewClient(&mcp.Implementation{Name: "exec-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	prefix := ""
	for _, n := range names {
		if strings.HasSuffix(n, "echo_args") {
			prefix = strings.TrimSuffix(n, "echo_args")
		}
	}
	if prefix == "" {
		t.Fatalf("aggregate tools %q: no echo_args", names)
	}
	checkExecTools(t, ctx, "http://"+addr+"/mcp", "", prefix)
}

// The exec process itself, on stdio, under 100 MiB of output capped at
// 1 MiB: its peak RSS stays bounded (Linux: VmHWM).
func TestExecRSSBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command(bin["mcp-bridge"], "exec", "--tools", execTools(t), "--log-level", "none")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{"n":104857600},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if !sc.Scan() {
		t.Fatal("no response")
	}
	var resp struct {
		Result struct {
			StructuredContent struct {
				Stdout    string `json:"stdout"`
				Truncated bool   `json:"truncated"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sc.Bytes(), &resp); err != nil || !resp.Result.StructuredContent.Truncated || len(resp.Result.StructuredContent.Stdout) != 1<<20 {
		t.Fatalf("response (%d bytes): %v", len(sc.Bytes()), err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var hwmKiB int
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Sscanf(strings.TrimPrefix(line, "VmHWM:"), "%d", &hwmKiB)
		}
	}
	t.Logf("exec's peak RSS for 100 MiB of output capped at 1 MiB: %d KiB", hwmKiB)
	if hwmKiB == 0 || hwmKiB > 64<<10 {
		t.Errorf("peak RSS %d KiB, want under 64 MiB", hwmKiB)
	}
}

// A client that gives up on a call (2026-07-28: closes the response
// stream; 2025: notifications/cancelled) stops the program and everything
// it started, through serve.
func TestExecCancelThroughServe(t *testing.T) {
	probe, _ := json.Marshal(bin["probe"])
	file := filepath.Join(t.TempDir(), "tools.json")
	os.WriteFile(file, []byte(fmt.Sprintf(`{"tools": {"hang": {"command": %s, "args": ["spawn", "{file}"], "grace": "300ms",
	  "inputSchema": {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}}}}`, probe)), 0o600)
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--", bin["mcp-bridge"], "exec", "--tools", file)
	waitReady(t, addr)
	for _, v := range []string{"", "2025-11-25"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		client := mcp.NewClient(&mcp.Implementation{Name: "exec-e2e", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		pidFile := filepath.Join(t.TempDir(), "pids")
		callCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{"file": pidFile}})
			done <- err
		}()
		var pids []byte
		deadline := time.Now().Add(20 * time.Second)
		for pids, err = os.ReadFile(pidFile); err != nil; pids, err = os.ReadFile(pidFile) {
			if time.Now().After(deadline) {
				t.Fatalf("%q: the program never started", v)
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
		stop()
		if err := <-done; err == nil {
			t.Errorf("%q: a cancelled call returned no error", v)
		}
		for _, p := range strings.Fields(string(pids)) {
			var pid int
			fmt.Sscan(p, &pid)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("%q: process %d survived the cancellation", v, pid)
				}
				time.Sleep(20 * time.Millisecond) // polling the kernel for another process's state
			}
		}
		cs.Close()
		cancel()
	}
}
