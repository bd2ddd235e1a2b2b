package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

const (
	initRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	modernList  = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	legacyList  = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1}}}`
)

var modernHdr = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "memo_list_memos"}

// status POSTs and returns the status and body; a refused connection is 0.
func status(url, body string, hdr map[string]string) (int, string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func readyzStatus(addr string) int {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// --drain-delay: on SIGTERM /readyz turns 503 at once while new requests are
// still served for the delay; then new work is refused, but a 2025 session
// keeps working until it ends, and the process exits as soon as it has
// (well before --shutdown-timeout).
func TestServeDrain(t *testing.T) {
	addr := freePort(t)
	const delay = 3 * time.Second
	p := startBridgeProc(t, "serve", "--listen", addr, "--replica-id", "r1", "--drain-delay", delay.String(), "--shutdown-timeout", "60s", "--", bin["memos"])
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	resp := post(t, url, initRequest, nil)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if !strings.HasPrefix(sid, "r1.") || resp.Header.Get("Mcp-Bridge-Replica") != "r1" {
		t.Fatalf("session id %q, replica header %q: want the r1. prefix and r1", sid, resp.Header.Get("Mcp-Bridge-Replica"))
	}
	sess := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess).Body.Close()

	t0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "/readyz 503", func() bool { return readyzStatus(addr) == http.StatusServiceUnavailable })
	readyAfter := time.Since(t0)
	code, body := status(url, modernList, modernHdr)
	servedAfter := time.Since(t0)
	if code != 200 || !strings.Contains(body, "memos/") {
		if servedAfter >= delay {
			t.Fatalf("the machine is too slow for this test: %v passed before the first request after SIGTERM", servedAfter)
		}
		t.Fatalf("a new request %v after SIGTERM, inside the %v drain delay: %d %s, want it served", servedAfter, delay, code, body)
	}
	waitFor(t, "new work refused", func() bool { c, _ := status(url, modernList, modernHdr); return c != 200 })
	refusedAfter := time.Since(t0)
	if refusedAfter < delay {
		t.Errorf("new work refused %v after SIGTERM, before the %v drain delay ended", refusedAfter, delay)
	}
	if c, b := status(url, modernList, modernHdr); c != http.StatusServiceUnavailable {
		t.Errorf("new work after the drain delay: %d %s, want 503 (a live session keeps the listener open)", c, b)
	}
	if c, b := status(url, legacyList, sess); c != 200 || !strings.Contains(b, "memos/") {
		t.Errorf("the 2025 session's call after the drain delay: %d %s, want it served", c, b)
	}
	select {
	case err := <-p.done:
		p.done <- err
		t.Fatalf("exited (%v) with a 2025 session open", err)
	default:
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	t1 := time.Now()
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
	t.Logf("/readyz 503 after %v; a new request served after %v; new work refused after %v (drain delay %v); exit %v after the session ended (shutdown timeout 60s)",
		readyAfter.Round(time.Millisecond), servedAfter.Round(time.Millisecond), refusedAfter.Round(time.Millisecond), delay, time.Since(t1).Round(time.Millisecond))
}

// A 2025 session that does not end is cut at --shutdown-timeout: its open
// GET stream ends and the process exits.
func TestServeDrainSessionTimeout(t *testing.T) {
	addr := freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--drain-delay", "500ms", "--shutdown-timeout", "2s", "--", bin["memos"])
	waitReady(t, addr)
	url := "http://" + addr + "/mcp"
	resp := post(t, url, initRequest, nil)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	sess := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess).Body.Close()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", get, err)
	}
	streamEnded := make(chan struct{})
	go func() {
		io.Copy(io.Discard, get.Body)
		get.Body.Close()
		close(streamEnded)
	}()
	t0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
	took := time.Since(t0)
	<-streamEnded
	if took < 2500*time.Millisecond {
		t.Errorf("exited %v after SIGTERM, before drain delay + shutdown timeout (2.5s): the open session was not waited for", took)
	}
	t.Logf("exit %v after SIGTERM (drain delay 500ms + shutdown timeout 2s)", took.Round(time.Millisecond))
}

// stuckDrainer is a drainer whose detached streams outlive any deadline,
// with inFlight requests.
type stuckDrainer struct{ inFlight int }

func (stuckDrainer) BeginDrain()                            {}
func (stuckDrainer) Refuse()                                {}
func (stuckDrainer) SessionsEnded() <-chan struct{}         { return nil }
func (stuckDrainer) BeginShutdown()                         {}
func (d stuckDrainer) InFlight() int                        { return d.inFlight }
func (stuckDrainer) WaitDetached(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// The shutdown warning speaks of requests in flight only when there are
// some (issue 21: "abandoning in-flight requests in_flight=0").
func TestShutdownTimeoutWarnsOnlyWithRequestsInFlight(t *testing.T) {
	for _, n := range []int{0, 2} {
		var logs strings.Builder
		log := zerolog.New(&logs).Level(zerolog.DebugLevel)
		stopServing(stuckDrainer{n}, &http.Server{}, &serveFlags{shutdown: 20 * time.Millisecond}, false, nil, log)
		warned := strings.Contains(logs.String(), `"level":"warn"`)
		if warned != (n > 0) || (n > 0 && !strings.Contains(logs.String(), `"in_flight":2`)) {
			t.Errorf("%d in flight: %s", n, logs.String())
		}
	}
}
