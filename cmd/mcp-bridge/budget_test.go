package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The budget tests run the built binary against hostile clients and
// children and measure the bridge process itself (issue 8, deliverables
// 4-6).

// rssMiB returns a process's resident set size (VmRSS) in MiB.
func rssMiB(t *testing.T, pid int) float64 {
	t.Helper()
	return procStatusMiB(t, pid, "VmRSS:")
}

// procStatusMiB returns one size field of /proc/<pid>/status in MiB.
func procStatusMiB(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kib float64
			fmt.Sscan(rest, &kib)
			return kib / 1024
		}
	}
	t.Fatal("no " + field)
	return 0
}

// toolCall is a 2026-07-28 tools/call body and its required headers.
func toolCall(id int, name, args string) (string, map[string]string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, name, args)
	return body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
}

// rawRequest writes an HTTP/1.1 POST on a fresh connection; the caller
// decides whether to read the answer.
func rawRequest(t *testing.T, addr, head, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	return c
}

func postHead(addr string, length int, hdr map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", addr, length)
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	return b.String()
}

// A child that stops reading its stdin: every request is answered within
// --child-write-timeout + 10 s, /healthz answers throughout, /readyz says
// 503, and SIGTERM still ends the bridge within --shutdown-timeout + 5 s.
func TestServeHungChild(t *testing.T) {
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--child-protocol", "modern",
		"--child-write-timeout", "2s", "--shutdown-timeout", "3s", "--", bin["hostilechild"], "-deaf", "-marker", t.TempDir()+"/deaf")
	waitReady(t, addr)
	base := "http://" + addr

	// Probes of /healthz and /readyz for the whole test, each on its own.
	var saw503 atomic.Bool
	var healthWorst atomic.Int64
	healthErr := make(chan error, 1)
	stop := make(chan struct{})
	var probes sync.WaitGroup
	probes.Go(func() {
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			if resp, err := c.Get(base + "/readyz"); err == nil {
				if resp.StatusCode == 503 {
					saw503.Store(true)
				}
				resp.Body.Close()
			}
			time.Sleep(20 * time.Millisecond) // polling another process
		}
	})
	probes.Go(func() {
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			resp, err := c.Get(base + "/healthz")
			if err != nil || resp.StatusCode != 200 {
				healthErr <- fmt.Errorf("/healthz: %v %v", err, resp)
				return
			}
			resp.Body.Close()
			if d := time.Since(t0); int64(d) > healthWorst.Load() {
				healthWorst.Store(int64(d))
			}
			time.Sleep(20 * time.Millisecond) // polling another process
		}
	})
	defer func() {
		close(stop)
		probes.Wait()
	}()

	// 30 × 256 KiB requests to a child that no longer reads: none fits in
	// its stdin pipe.
	pad := strings.Repeat("x", 256<<10)
	var wg sync.WaitGroup
	var worst atomic.Int64
	for i := range 30 {
		wg.Go(func() {
			body, hdr := toolCall(i+1, "big", `{"pad":"`+pad+`"}`)
			c := &http.Client{Timeout: 60 * time.Second}
			t0 := time.Now()
			req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i+1, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			d := time.Since(t0)
			if d > 12*time.Second {
				t.Errorf("request %d answered after %v, want < child-write-timeout + 10s", i+1, d)
			}
			if !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), fmt.Sprintf(`"id":%d`, i+1)) {
				t.Errorf("request %d: %d %s, want a JSON-RPC error for its id", i+1, resp.StatusCode, b)
			}
			for {
				w := worst.Load()
				if int64(d) <= w || worst.CompareAndSwap(w, int64(d)) {
					break
				}
			}
		})
	}
	wg.Wait()
	t.Logf("30 × 256 KiB to a child that stopped reading: slowest answer %v; slowest /healthz %v",
		time.Duration(worst.Load()).Round(time.Millisecond), time.Duration(healthWorst.Load()).Round(time.Millisecond))
	// The answers come as the hung child is killed; /readyz says so until
	// its replacement is ready.
	waitFor(t, "/readyz to say 503 after the hang", saw503.Load)
	select {
	case err := <-healthErr:
		t.Fatal(err)
	default:
	}

	// SIGTERM while the (restarted) child is hung again.
	waitReady(t, addr)
	for i := range 3 {
		body, hdr := toolCall(100+i, "big", `{"pad":"`+pad+`"}`)
		rawRequest(t, addr, postHead(addr, len(body), hdr), body)
	}
	t0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 8*time.Second)
	t.Logf("SIGTERM with a hung child: exited after %v", time.Since(t0).Round(time.Millisecond))
}

// 40 connections announce 33 MB bodies and send 10 bytes: each is dropped
// within --read-timeout + 5 s, the bridge's RSS grows < 32 MiB, and other
// clients are served meanwhile.
func TestServeStalledBodies(t *testing.T) {
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--read-timeout", "2s", "--", bin["memos"])
	waitReady(t, addr)
	body, hdr := toolCall(1, "memo_list_memos", `{"pageSize":2}`)
	served := func() {
		resp := post(t, "http://"+addr+"/mcp", body, hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) {
			t.Errorf("other client: %d %s", resp.StatusCode, b)
		}
	}
	served()
	pid := p.cmd.Process.Pid
	before, dataBefore := rssMiB(t, pid), procStatusMiB(t, pid, "VmData:")

	conns := make([]net.Conn, 40)
	t0 := time.Now()
	for i := range conns {
		conns[i] = rawRequest(t, addr, postHead(addr, 33_000_000, hdr), `{"jsonrpc"`)
	}
	served()
	// Let the bridge take in what it was sent, then measure.
	// Fresh pages of a buffer sized to the announced length are not
	// resident until written, so RSS alone would not show such buffers:
	// VmData (the address space the bridge committed) does.
	peak, dataPeak := 0.0, 0.0
	for range 5 {
		peak = max(peak, rssMiB(t, pid))
		dataPeak = max(dataPeak, procStatusMiB(t, pid, "VmData:"))
		served()
	}
	var wg sync.WaitGroup
	var last atomic.Int64
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(t0.Add(7 * time.Second))
			_, err := io.Copy(io.Discard, c) // until the bridge closes it
			if err != nil {
				t.Errorf("connection %d not dropped within read-timeout + 5s: %v", i, err)
			}
			last.Store(int64(time.Since(t0)))
		})
	}
	wg.Wait()
	peak = max(peak, rssMiB(t, pid))
	t.Logf("40 stalled 33 MB bodies: RSS %.1f MiB before, peak %.1f MiB (+%.1f); VmData +%.1f MiB; all dropped after %v",
		before, peak, peak-before, dataPeak-dataBefore, time.Duration(last.Load()).Round(time.Millisecond))
	if peak-before >= 32 {
		t.Errorf("RSS grew %.1f MiB, want < 32 MiB", peak-before)
	}
	if dataPeak-dataBefore >= 256 {
		t.Errorf("VmData grew %.1f MiB: buffers sized to announced lengths", dataPeak-dataBefore)
	}
	served()
}

// 24 clients that never read their 8 MiB answers: the bridge's RSS stays
// under --max-buffered + 128 MiB, and a fresh client is served.
func TestServeUnreadAnswers(t *testing.T) {
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--child-protocol", "modern",
		"--max-buffered", "64MiB", "--", bin["hostilechild"])
	waitReady(t, addr)
	pid := p.cmd.Process.Pid
	body, hdr := toolCall(1, "big", `{"bytes":8388608}`)
	for range 24 {
		// Never read: the answer sits in the bridge (and the sockets).
		rawRequest(t, addr, postHead(addr, len(body), hdr), body)
	}
	peak, busy := 0.0, 0
	fresh := func() {
		// A fresh client, reading: retried on 503 + Retry-After while the
		// budget is being freed.
		small, shdr := toolCall(2, "big", `{"bytes":1000}`)
		for try := 0; ; try++ {
			peak = max(peak, rssMiB(t, pid))
			resp := post(t, "http://"+addr+"/mcp", small, shdr)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "" && try < 10 {
				busy++
				time.Sleep(time.Second) // Retry-After: 1
				continue
			}
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) {
				t.Fatalf("fresh client: %d %s", resp.StatusCode, b)
			}
			return
		}
	}
	for range 20 {
		fresh()
	}
	// And one whose answer is as big as the unread ones.
	resp := post(t, "http://"+addr+"/mcp", body, hdr)
	n, _ := io.Copy(io.Discard, bufio.NewReader(resp.Body))
	resp.Body.Close()
	if resp.StatusCode != 200 || n < 8<<20 {
		t.Errorf("fresh client with an 8 MiB answer: %d, %d bytes", resp.StatusCode, n)
	}
	peak = max(peak, rssMiB(t, pid))
	t.Logf("24 unread 8 MiB answers, --max-buffered 64MiB: peak RSS %.1f MiB; the fresh client got %d × 503 + Retry-After in 21 requests", peak, busy)
	if peak >= 64+128 {
		t.Errorf("RSS peaked at %.1f MiB, want < --max-buffered + 128 MiB = 192 MiB", peak)
	}
}

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range ents {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		var ppid int
		if len(f) > 1 && f[0] != "Z" {
			fmt.Sscan(f[1], &ppid)
		}
		if ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Legacy sessions whose clients disconnected mid-call are reaped within
// --session-idle-timeout + 5 s (their children gone, their ids 404), and
// 100 of them do not lock out the 101st client.
func TestServeReapsAbandonedSessions(t *testing.T) {
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--session-idle-timeout", "3s", "--max-sessions", "100",
		"--", bin["memos"], "-step-delay", "200ms")
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	pid := p.cmd.Process.Pid
	const clients = 100
	ids := make([]string, clients)
	var mu sync.Mutex
	var lastLeft time.Time
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := range clients {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp := post(t, url, legacyInit, nil)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			sid := resp.Header.Get("Mcp-Session-Id")
			if sid == "" {
				t.Errorf("client %d: initialize: %d", i, resp.StatusCode)
				return
			}
			ids[i] = sid
			hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
			resp = post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
			resp.Body.Close()
			// A long call; the client leaves after its first progress event.
			resp = post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},"_meta":{"progressToken":1}}}`, hdr)
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Errorf("client %d: stream ended before any progress: %v", i, err)
					break
				}
				if strings.Contains(line, "notifications/progress") {
					break
				}
			}
			resp.Body.Close() // disconnect mid-call
			mu.Lock()
			lastLeft = time.Now()
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	kids := len(childrenOf(pid)) // the first sessions may be reaped already
	// The shared child for 2026-07-28 clients stays.
	deadline := lastLeft.Add(3*time.Second + 5*time.Second)
	for len(childrenOf(pid)) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d children still running %v after the last client left; want the sessions reaped within idle timeout + 5s",
				len(childrenOf(pid)), time.Since(lastLeft).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond) // polling other processes
	}
	t.Logf("%d abandoned sessions (%d children left when the last client left) all reaped %v after it (--session-idle-timeout 3s)",
		clients, kids, time.Since(lastLeft).Round(time.Millisecond))
	for i, sid := range ids {
		resp := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("session %d after reaping: %d, want 404", i, resp.StatusCode)
		}
	}
	resp := post(t, url, legacyInit, nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("client 101: %d, want a new session", resp.StatusCode)
	}
}
