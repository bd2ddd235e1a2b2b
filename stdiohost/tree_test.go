package stdiohost

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
)

// These tests run on every platform (Windows included, where the tree is a
// Job Object); alive_*_test.go and helper_*_test.go hold what differs.

// A child that ends its lines with CRLF is read line by line without the
// CR, and blank lines are skipped.
func TestChildCRLFLines(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("crlf"), Options{OnMessage: c.on})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	h.Close()
	if want := []string{`{"a":1}`, `{"b":2}`}; !slices.Equal(c.msgs, want) {
		t.Errorf("messages %q, want %q", c.msgs, want)
	}
}

// The child gets its arguments exactly, without a shell, however awkward.
// On Windows they cross a single command line that os/exec quotes for
// CreateProcess and the child splits again (CommandLineToArgvW rules):
// spaces, quotes, backslashes before quotes and at the end, an empty
// argument and shell metacharacters must all survive.
func TestChildArgsQuoted(t *testing.T) {
	args := []string{"", "a b", `"quoted"`, `back\slash\`, `tail\`, `\"x\"`, `C:\Program Files\x\`,
		"tab\there", "%PATH%", "$HOME", "a&b|c<d>e^f", "é 日本", "--flag=va lue", `'single'`}
	cmd := helperCmd("args")
	cmd.Args = append(cmd.Args, args...)
	c := newCollector()
	h, err := Start(cmd, Options{OnMessage: c.on})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var got []string
	if err := json.Unmarshal([]byte(c.next(t)), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, args) {
		t.Errorf("child got %q\nwant %q", got, args)
	}
}

// When the bridge itself is killed (no Close, no cleanup), its child dies
// with it: on Linux by the parent-death signal, on Windows with the whole
// job, grandchildren included, because the kernel closes the dead bridge's
// job handle. On Linux the grandchild, which only a signal to the group
// would reach, survives; macOS has neither mechanism.
func TestTreeDiesWithKilledBridge(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skipf("%s has no parent-death signal: a killed bridge's child survives (docs/platforms.md)", runtime.GOOS)
	}
	bridge := helperCmd("host")
	out, err := bridge.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bridge.Start(); err != nil {
		t.Fatal(err)
	}
	var child, grandchild int
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscan(line, &child, &grandchild); err != nil || serr != nil {
		bridge.Process.Kill()
		bridge.Wait()
		t.Fatalf("helper said %q: %v %v", line, err, serr)
	}
	t.Cleanup(func() { killPid(grandchild) })
	if !alive(child) || !alive(grandchild) {
		t.Fatal("child or grandchild not running")
	}
	bridge.Process.Kill()
	bridge.Wait()
	waitGone(t, child)
	if runtime.GOOS == "windows" {
		waitGone(t, grandchild)
	}
}

// killPid ends a process a test may have left behind.
func killPid(pid int) {
	if !alive(pid) {
		return // gone already: the pid may since name another process
	}
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		p.Release()
	}
}
