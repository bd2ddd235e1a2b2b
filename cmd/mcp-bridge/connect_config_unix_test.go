//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect --config: a SIGHUP that adds a server brings its tools into the
// host's open session, with a list_changed, and the first server goes on
// answering (before: SIGHUP killed the process, its default action).
func TestConnectConfigSIGHUPAddsServer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}}`, bin["memos"]))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--config", file, "--log-level", "info")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			t.Logf("connect --config log:\n%s", tail(stderr.String(), 40))
		}
	}()
	tools := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	if names := tools(); !slices.Contains(names, "memos_auth_get_current_user") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "memos2_") }) {
		t.Fatalf("before the reload: %q", names)
	}
	write(fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}, "memos2": {"command": %q}}}`, bin["memos"], bin["memos"]))
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the SIGHUP")
	}
	for !slices.Contains(tools(), "memos2_auth_get_current_user") {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("memos2 never listed after the SIGHUP: %q", tools())
		}
	}
	for _, name := range []string{"memos_auth_get_current_user", "memos2_auth_get_current_user"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "users/1") {
			t.Errorf("%s after the SIGHUP: %v %+v", name, err, res)
		}
	}
	if !strings.Contains(stderr.String(), "SIGHUP: configuration reloaded") {
		t.Error("the reload was not logged")
	}
}
