package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// Twins of TestServeSIGTERM. On Windows the console's Ctrl-Break stands in
// for SIGTERM, and every child runs in a Job Object, so grandchildren die
// with it. Compiled on every platform by scripts/test.sh, run on Windows.

// startTreeBridge starts serve in a console process group of its own (so
// that a Ctrl-Break reaches it alone) with a child that starts a sleeping
// grandchild, and waits until the bridge's children have started theirs.
func startTreeBridge(t *testing.T) (*bridgeProc, string) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	addr := freePort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &bridgeProc{cmd: exec.Command(bin["mcp-bridge"], "serve", "--listen", addr, "--shutdown-timeout", "5s", "--", self, pids, bin["memos"])}
	p.cmd.Env = append(os.Environ(), "MCP_BRIDGE_TEST_HELPER=spawner")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	p.stderr = &bytes.Buffer{}
	p.cmd.Stderr = p.stderr
	p.done = make(chan error, 1)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	waitReady(t, addr)
	// The two era-probe siblings each started a grandchild.
	waitFor(t, "two grandchildren", func() bool { return len(pidsIn(t, pids)) >= 2 })
	return p, pids
}

func TestServeCtrlBreakWindows(t *testing.T) {
	p, pids := startTreeBridge(t)
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(p.cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
	for _, pid := range pidsIn(t, pids) {
		waitFor(t, "grandchild to be gone", func() bool { return !alive(pid) })
	}
}

// Killed without a chance to clean up, the bridge still takes every child
// and grandchild with it: the kernel closes its job handles.
func TestKilledBridgeTakesTreeWindows(t *testing.T) {
	p, pids := startTreeBridge(t)
	p.cmd.Process.Kill()
	p.wait(t, 20*time.Second)
	for _, pid := range pidsIn(t, pids) {
		waitFor(t, "grandchild to be gone", func() bool { return !alive(pid) })
	}
}
