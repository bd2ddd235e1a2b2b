package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBindAddr: a host-less address binds loopback, for --listen and
// --metrics-listen alike.
func TestBindAddr(t *testing.T) {
	for in, want := range map[string]string{":9464": "127.0.0.1:9464", "0.0.0.0:9464": "0.0.0.0:9464", "[::1]:1": "[::1]:1", "[::]:8080": "[::]:8080"} {
		if got, err := bindAddr("--listen", in); err != nil || got != want {
			t.Errorf("bindAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := bindAddr("--listen", "9464"); err == nil {
		t.Error("a bare port without ':' was accepted")
	}
}

// TestServeMetricsListen: `serve --metrics-listen :PORT` binds loopback,
// /metrics counts the tool calls served, and every MCP request gets an
// access-log line on stderr (info, the default level).
func TestServeMetricsListen(t *testing.T) {
	addr := freePort(t)
	_, mport, _ := net.SplitHostPort(freePort(t))
	p := startBridgeProc(t, "serve", "--listen", addr, "--metrics-listen", ":"+mport, "--log-format", "json", "--", bin["memos"])
	waitReady(t, addr)
	const n = 3
	for i := range n {
		body, hdr := toolCall(i+1, "memo_debug_stats", "{}")
		resp := post(t, "http://"+addr+"/mcp", body, hdr)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("tools/call: %d", resp.StatusCode)
		}
	}
	resp, err := http.Get("http://127.0.0.1:" + mport + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="memo_debug_stats",mcp_method_name="tools/call",mcp_protocol_version="2026-07-28",server=""} 3`
	if !strings.Contains(string(text), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, text)
	}
	// The lines were written before the answers; stop the process so that
	// its stderr can be read.
	p.cmd.Process.Kill()
	p.wait(t, 20*time.Second)
	logs := p.stderr.String()
	if !strings.Contains(logs, `"url":"http://127.0.0.1:`+mport+`/metrics"`) {
		t.Errorf("no metrics url on loopback in the log:\n%s", logs)
	}
	if c := strings.Count(logs, `"mcp_method":"tools/call"`); c != n {
		t.Errorf("%d access-log lines for tools/call, want %d", c, n)
	}
}
