//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM: in-flight requests finish, then every child and grandchild of
// the bridge is gone (supergateway PR#124: orphans by the thousand), on
// Linux even one that left its process group with setsid. The Windows
// twins are in sigterm_windows_test.go.
func TestServeSIGTERM(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	// The child starts a grandchild that ignores SIGTERM, then becomes memos.
	// On Linux it also starts one that leaves the process group (setsid),
	// which only the bridge's orphan reaper reaches, and ignores SIGTERM too.
	script := `trap '' TERM; sleep 300 & echo $! >> "$0"; trap - TERM; exec "$1" -step-delay 100ms`
	perChild := 1
	if runtime.GOOS == "linux" {
		script = `trap '' TERM; sleep 300 & echo $! >> "$0"; setsid sleep 301 & echo $! >> "$0"; trap - TERM; exec "$1" -step-delay 100ms`
		perChild = 2
	}
	p := startBridgeProc(t, "serve", "--listen", addr, "--shutdown-timeout", "5s", "--", "sh", "-c", script, filepath.Join(dir, "pids"), bin["memos"])
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	// A legacy session gets a child (and grandchild) of its own.
	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	resp.Body.Close()
	if resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatal("no session")
	}
	// A call that takes ~500ms is in flight when SIGTERM arrives.
	result := make(chan string, 1)
	started := make(chan struct{})
	go func() {
		r := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":5},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "memo_export_memos"})
		defer r.Body.Close()
		br := bufio.NewReader(r.Body)
		first, _ := br.ReadString('\n') // the first progress event: the call is running
		close(started)
		rest, _ := io.ReadAll(br)
		result <- first + string(rest)
	}()
	// The two era-probe siblings (one of which stays on as the shared
	// child) and the session's child each started one.
	waitFor(t, "three children's grandchildren", func() bool {
		return len(pidsIn(t, filepath.Join(dir, "pids"))) >= 3*perChild
	})
	<-started
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case r := <-result:
		if !strings.Contains(r, "exported") {
			t.Errorf("in-flight call after SIGTERM: %s, want its result", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight call never finished")
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
	pids := pidsIn(t, filepath.Join(dir, "pids"))
	t.Cleanup(func() {
		for _, pid := range pids {
			if t.Failed() && alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for _, pid := range pids {
		waitFor(t, fmt.Sprintf("grandchild %d to be gone", pid), func() bool { return !alive(pid) })
	}
}
