//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Timeouts bounding every step. Nothing here waits unbounded.
const (
	readyTimeout    = 30 * time.Second // bridge /readyz or a direct server's port
	driverTimeout   = 90 * time.Second // one driver client run
	stopTimeout     = 20 * time.Second // SIGTERM → exit, before SIGKILL
	orphanTimeout   = 5 * time.Second  // children gone after the bridge exited
	pollInterval    = 50 * time.Millisecond
	portAttempts    = 5
	shutdownTimeout = "5s" // the bridge's own --shutdown-timeout
)

// artifactDir is where a test keeps its logs and results: under
// $MCP_INTEROP_ARTIFACTS/<test> when that is set (kept), else a temp dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MCP_INTEROP_ARTIFACTS")
	if base == "" {
		return t.TempDir()
	}
	dir := filepath.Join(base, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts: %v", err)
	}
	return dir
}

// freePort asks the kernel for a free loopback port. mcp-bridge cannot bind
// port 0 and report it, so there is a window in which another process can
// take the port: callers retry on "address already in use".
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// proc is a started process whose exit is observed by one goroutine.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when Wait returned
	waitErr error
}

func startProc(t *testing.T, name, logPath string, dir string, argv ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, logPath, dir, nil, argv...)
}

// startProcEnv is startProc with extra environment variables (KEY=value).
func startProcEnv(t *testing.T, name, logPath string, dir string, extraEnv []string, argv ...string) *proc {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("%s log: %v", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if len(extraEnv) > 0 {
		cmd.Env = append(os.Environ(), extraEnv...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so a last-resort kill reaches what it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p
}

// groupCommand runs a node program from scripts/interop in a process
// group of its own: it spawns children (servers, bridges, the suite's
// scenario servers), and when ctx ends all of them are killed, not only
// the first.
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = env.interopDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits; after stopTimeout it SIGKILLs the process
// group. It reports whether the process exited by itself after SIGTERM.
func (p *proc) stop() (graceful bool) {
	if p.exited() {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		return false
	}
}

func (p *proc) exitCode() int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// bridge is a running `mcp-bridge serve`.
type bridge struct {
	*proc
	URL  string // http://127.0.0.1:PORT/mcp
	base string // http://127.0.0.1:PORT
}

// serveOpts configures startBridge.
type serveOpts struct {
	Flags []string // extra serve flags, e.g. --session-mode shared
	Child []string // the stdio MCP server command
	Dir   string   // working directory (default scripts/interop)
	Env   []string // extra environment (KEY=value), e.g. MCP_BRIDGE_AUTH_TOKEN
	// NoWait: return once the port accepts connections, without waiting
	// for /readyz (to test what clients see while the child starts).
	NoWait bool
}

// startBridge starts `mcp-bridge serve --listen 127.0.0.1:PORT --log-level
// debug ... -- CHILD...`, retrying with a new port if the chosen one was
// taken, and waits for /readyz. Cleanup stops it and checks that it shut
// down cleanly: exit 0 on SIGTERM, no data race or panic in its log, and no
// child process left behind.
func startBridge(t *testing.T, o serveOpts) *bridge {
	t.Helper()
	dir := o.Dir
	if dir == "" {
		dir = env.interopDir
	}
	art := artifactDir(t)
	prefix := "bridge"
	if n := nextBridge(t); n > 1 {
		prefix = fmt.Sprintf("bridge%d", n) // a test's second bridge: bridge2-1.log
	}
	var argv []string
	b := &bridge{}
	p, err := onFreePort(t, func(attempt int, addr string) (*proc, error) {
		argv = []string{env.bridge, "serve", "--listen", addr, "--log-level", "debug", "--shutdown-timeout", shutdownTimeout}
		argv = append(argv, o.Flags...)
		argv = append(argv, "--")
		argv = append(argv, o.Child...)
		p := startProcEnv(t, "mcp-bridge", filepath.Join(art, fmt.Sprintf("%s-%d.log", prefix, attempt)), dir, o.Env, argv...)
		b.proc, b.base = p, "http://"+addr
		b.URL = b.base + "/mcp"
		if o.NoWait {
			return p, waitPort(p, addr)
		}
		return p, b.waitReady()
	})
	if err != nil {
		t.Fatalf("mcp-bridge did not become ready: %v\nargv: %q\nlog:\n%s", err, argv, tail(p.log(), 60))
	}
	t.Logf("mcp-bridge serving %s (log %s): %s", b.URL, p.logPath, strings.Join(o.Child, " "))
	t.Cleanup(func() { b.shutdown(t) })
	return b
}

// onFreePort calls start with a free loopback address until it succeeds,
// fails other than by the port having been taken meanwhile (see freePort),
// or has tried portAttempts ports. A failed attempt's process is stopped.
func onFreePort(t *testing.T, start func(attempt int, addr string) (*proc, error)) (*proc, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		p, err := start(attempt, addr)
		if err == nil {
			return p, nil
		}
		p.stop()
		if !strings.Contains(p.log(), "address already in use") || attempt == portAttempts {
			return p, err
		}
		t.Logf("%s was taken meanwhile; retrying", addr)
	}
}

// bridgesStarted counts the bridges each test started, so that each gets
// its own log file.
var bridgesStarted sync.Map // test name -> *atomic.Int32

func nextBridge(t *testing.T) int {
	v, _ := bridgesStarted.LoadOrStore(t.Name(), new(atomic.Int32))
	return int(v.(*atomic.Int32).Add(1))
}

// waitReady polls /readyz until it answers 200, the process exits, or
// readyTimeout passes.
func (b *bridge) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			body := make([]byte, 512)
			n, _ := resp.Body.Read(body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body[:n])))
		} else {
			last = err.Error()
		}
		select {
		case <-b.done:
			return fmt.Errorf("exited (%v) before /readyz answered 200", b.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("/readyz not 200 after %v (last: %s)", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// shutdown stops the bridge and reports what a clean shutdown must not show.
func (b *bridge) shutdown(t *testing.T) {
	t.Helper()
	graceful := b.stop()
	log := b.log()
	if t.Failed() {
		t.Logf("mcp-bridge log (%s):\n%s", b.logPath, tail(log, 80))
	}
	if !graceful {
		t.Errorf("BRIDGE BUG? mcp-bridge did not exit within %v of SIGTERM (--shutdown-timeout %s); killed.\nlog:\n%s",
			stopTimeout, shutdownTimeout, tail(log, 40))
	} else if code := b.exitCode(); code != 0 {
		t.Errorf("BRIDGE BUG? mcp-bridge exited %d after SIGTERM (want 0)\nlog:\n%s", code, tail(log, 40))
	}
	checkLogClean(t, "mcp-bridge", log)
	checkNoOrphans(t, log)
}

func excerpt(s string, i, n int) string {
	end := i + n
	if end > len(s) {
		end = len(s)
	}
	return s[i:end]
}

// childPIDs lists the child_pid values in the bridge's JSON log ("child started").
func childPIDs(log string) []int {
	var pids []int
	seen := map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l struct {
			PID int `json:"child_pid"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.PID > 0 && !seen[l.PID] {
			seen[l.PID] = true
			pids = append(pids, l.PID)
		}
	}
	return pids
}

// alive reports whether pid still runs (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...; comm may contain spaces, so split after the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// checkNoOrphans: every child the bridge logged must be gone once it exited
// ("No orphans" in design.md); survivors are reported and killed.
func checkNoOrphans(t *testing.T, log string) {
	t.Helper()
	pids := childPIDs(log)
	deadline := time.Now().Add(orphanTimeout)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Errorf("BRIDGE BUG: child pid %d (%s) outlived mcp-bridge by %v; killing it",
					pid, strings.ReplaceAll(string(cmdline), "\x00", " "), orphanTimeout)
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(pollInterval) // polling a process table, not synchronizing with it
	}
}

// startDirect starts a server that listens by itself (e.g. everything-server
// -http ADDR) on a free port, retrying on a port conflict, and waits until
// its port accepts connections. addrArg builds argv from the address.
func startDirect(t *testing.T, name string, argv func(addr string) []string) (p *proc, addr string) {
	t.Helper()
	return startDirectEnv(t, name, nil, argv)
}

// startDirectEnv is startDirect for a server configured by its environment
// too (server-everything takes its port from $PORT): extraEnv builds the
// extra KEY=value pairs from the address.
func startDirectEnv(t *testing.T, name string, extraEnv func(addr string) []string, argv func(addr string) []string) (p *proc, addr string) {
	t.Helper()
	art := artifactDir(t)
	p, err := onFreePort(t, func(attempt int, a string) (*proc, error) {
		addr = a
		var ev []string
		if extraEnv != nil {
			ev = extraEnv(addr)
		}
		p := startProcEnv(t, name, filepath.Join(art, fmt.Sprintf("%s-%d.log", name, attempt)), env.interopDir, ev, argv(addr)...)
		return p, waitPort(p, addr)
	})
	if err != nil {
		t.Fatalf("%s did not start: %v\nlog:\n%s", name, err, tail(p.log(), 40))
	}
	t.Cleanup(func() { p.stop() })
	return p, addr
}

func waitPort(p *proc, addr string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("exited (%v)", p.waitErr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting after %v: %v", addr, readyTimeout, err)
		}
		time.Sleep(pollInterval) // readiness polling
	}
}
