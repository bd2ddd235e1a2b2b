//go:build interop

package interop

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 23: `mcp-bridge connect URL` (auto transport) in front of servers
// that speak only the legacy HTTP+SSE transport (2024-11-05). The POST to
// the SSE URL fails ("Cannot POST /sse"), the GET opens the stream with
// its endpoint event, and connect carries the session over it: from a
// 2025 host (TS SDK v1) as is, from a host pinned to 2026-07-28 (TS SDK
// v2) translated.

// fallbackLogged: the fallback is logged once, at INFO.
func fallbackLogged(t *testing.T, log string) {
	t.Helper()
	const msg = "using the legacy HTTP+SSE transport (2024-11-05)"
	if n := strings.Count(log, msg); n != 1 {
		t.Errorf("the fallback to HTTP+SSE was logged %d times, want once", n)
	}
}

// supergatewaySSE starts supergateway 4.0.0 --outputTransport sse in front
// of argv on stdio and returns its SSE URL (it binds every interface; the
// test reaches it on 127.0.0.1).
func supergatewaySSE(t *testing.T, argv []string) string {
	t.Helper()
	sg := filepath.Join(env.nodeModules, "supergateway", "dist", "index.js")
	_, addr := startDirect(t, "supergateway-sse", func(addr string) []string {
		port := addr[strings.LastIndexByte(addr, ':')+1:]
		return []string{env.node, sg, "--stdio", strings.Join(argv, " "), "--outputTransport", "sse", "--port", port}
	})
	return "http://" + addr + "/sse"
}

// serverEverythingSSE starts server-everything 2026.8.31 in its SSE mode
// (`sse`: GET /sse, POST /message; port from $PORT).
func serverEverythingSSE(t *testing.T) string {
	t.Helper()
	script := filepath.Join(env.nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	_, addr := startDirectEnv(t, "server-everything-sse",
		func(addr string) []string { return []string{"PORT=" + addr[strings.LastIndexByte(addr, ':')+1:]} },
		func(string) []string { return []string{env.node, script, "sse"} })
	return "http://" + addr + "/sse"
}

var sseHosts = []struct {
	name, driver string
	extra        []string
}{
	{"ts-v1", "ts-v1-client.mjs", nil},
	{"ts-v2-pinned-2026", "ts-v2-client.mjs", []string{"--expect-version", "2026-07-28"}},
}

func TestConnectToSupergatewaySSE(t *testing.T) {
	for _, h := range sseHosts {
		t.Run(h.name, func(t *testing.T) {
			url := supergatewaySSE(t, []string{env.memos})
			const steps = 3
			args := append(append([]string(nil), h.extra...),
				"--list",
				"--call", "memo_list_memos", "--args", `{"pageSize":1}`,
				"--progress", "--progress-tool", "memo_export_memos", "--progress-args", `{"steps":3}`,
			)
			r := runConnect(t, "sse-sg-"+h.name, h.driver, nil, url, args...)
			fallbackLogged(t, r.log)
			if list := step[listStep](t, r.driverResult, "listTools"); !slices.Contains(list.Names, "memo_export_memos") {
				t.Errorf("tools/list lacks memo_export_memos: %q", list.Names)
			}
			if c := step[callStep](t, r.driverResult, "call"); !strings.Contains(c.Text+string(c.StructuredContent), "memo") {
				t.Errorf("memo_list_memos returned %q %s", c.Text, c.StructuredContent)
			}
			if p := step[progressStep](t, r.driverResult, "progress"); p.Wire != steps || len(p.Events) < steps-1 {
				t.Errorf("progress: %d lines on the bridge's stdout, %d reached onprogress; want %d", p.Wire, len(p.Events), steps)
			}
			// memos answers server/discover itself (it speaks both eras):
			// its 2026-07-28 answers pass through supergateway's stream.
		})
	}
}

func TestConnectToServerEverythingSSE(t *testing.T) {
	for _, h := range sseHosts {
		t.Run(h.name, func(t *testing.T) {
			url := serverEverythingSSE(t)
			const steps = 3
			args := append(append([]string(nil), h.extra...),
				"--list",
				"--call", "echo", "--args", `{"message":"over HTTP+SSE"}`,
				"--progress", "--progress-tool", "trigger-long-running-operation", "--progress-args", `{"duration":1,"steps":3}`,
			)
			r := runConnect(t, "sse-everything-"+h.name, h.driver, nil, url, args...)
			fallbackLogged(t, r.log)
			if s := r.Summary.Server; s.Name != "mcp-servers/everything" {
				t.Errorf("serverInfo %+v, want server-everything's", s)
			}
			if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: over HTTP+SSE" {
				t.Errorf("echo returned %q", c.Text)
			}
			if p := step[progressStep](t, r.driverResult, "progress"); p.Wire != steps || len(p.Events) < steps-1 {
				t.Errorf("progress: %d lines on the bridge's stdout, %d reached onprogress; want %d", p.Wire, len(p.Events), steps)
			}
			// server-everything's SSE mode is the TS SDK v1 server: 2025
			// only, so a 2026-07-28 host is translated.
			if h.driver == "ts-v2-client.mjs" && !strings.Contains(r.log, "translating between protocol eras") {
				t.Errorf("server-everything serves 2025 only: the bridge must translate for a 2026-07-28 host")
			}
		})
	}
}
