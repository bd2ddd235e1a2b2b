package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that exits as soon as it starts: the bridge stays up (/healthz),
// says why it is not ready (/readyz 503), answers a request at once with a
// JSON-RPC error once the child has died three times without answering
// (instead of holding it for the probe timeout), restarts the child with a
// growing backoff (not in a tight loop), and still stops at once on SIGTERM.
func TestServeCrashLoop(t *testing.T) {
	addr := freePort(t)
	starts := t.TempDir() + "/starts"
	p := startBridgeProc(t, "serve", "--listen", addr, "--child-protocol", "modern",
		"--shutdown-timeout", "2s", "--", bin["hostilechild"], "-crash", starts)
	base := "http://" + addr
	count := func() int {
		b, _ := os.ReadFile(starts)
		return bytes.Count(b, []byte("\n"))
	}
	waitFor(t, "the child's first start", func() bool { return count() > 0 })
	t0 := time.Now()
	cpu0 := cpuSeconds(t, p.cmd.Process.Pid)

	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz during a crash loop: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	why, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("/readyz during a crash loop: %d %s, want 503", resp.StatusCode, why)
	}

	// Three children died without answering: a request is answered at
	// once (an error for its own id), not held for the probe timeout (10 s)
	// while the child keeps dying.
	waitFor(t, "three failed starts", func() bool { return count() > 3 })
	body, hdr := toolCall(7, "big", `{"bytes":1}`)
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	r0 := time.Now()
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(r0)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"id":7`) || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("request during a crash loop: %d %q %s, want 503 + Retry-After and a JSON-RPC error for id 7", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	// At once is the requirement (the figure is logged below); a request
	// held for a child would wait the start timeout (60 s) or the client's
	// 30 s, so 15 s tells them apart on a loaded machine too.
	if took > 15*time.Second {
		t.Fatalf("request answered after %v, want at once (not after the 60 s start timeout)", took)
	}

	// The restarts back off: from 250 ms doubling-ish (randomized), at most
	// a handful in this window, never a tight loop.
	elapsed := time.Since(t0)
	n := count()
	cpu := cpuSeconds(t, p.cmd.Process.Pid) - cpu0
	t.Logf("crash loop: %d starts in %v, bridge CPU %.2f s, request answered in %v", n, elapsed.Round(time.Millisecond), cpu, took.Round(time.Millisecond))
	if limit := int(elapsed/(250*time.Millisecond)) + 2; n > limit {
		t.Fatalf("%d starts in %v: the restart is not backing off", n, elapsed)
	}

	s0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 7*time.Second)
	t.Logf("SIGTERM during a crash loop: exited after %v", time.Since(s0).Round(time.Millisecond))
}

// cpuSeconds is a process's user + system CPU time (/proc/<pid>/stat).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesized command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) / 100 // USER_HZ
}

// A request that arrives while the child is still between its first
// failed starts waits for the next child, but is answered (503) as soon
// as the third start fails — not after the whole probe timeout.
func TestServeCrashLoopWaitingRequest(t *testing.T) {
	addr := freePort(t)
	starts := t.TempDir() + "/starts"
	startBridgeProc(t, "serve", "--listen", addr, "--child-protocol", "modern",
		"--shutdown-timeout", "2s", "--", bin["hostilechild"], "-crash", starts)
	waitFor(t, "the child's first start", func() bool {
		b, _ := os.ReadFile(starts)
		return len(b) > 0
	})
	body, hdr := toolCall(7, "big", `{"bytes":1}`)
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	r0 := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(r0)
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"id":7`) {
		t.Fatalf("a request waiting through the crash loop: %d %s, want 503 and an error for id 7", resp.StatusCode, b)
	}
	t.Logf("a request sent after the first failed start was answered after %v", took.Round(time.Millisecond))
	// Three failed starts with backoff take ~2 s; a request held for a
	// child would wait the start timeout (60 s) or the client's 30 s.
	if took > 20*time.Second {
		t.Fatalf("answered after %v: it waited for a child that does not come", took)
	}
}
