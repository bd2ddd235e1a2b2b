//go:build interop

package interop

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// (issue 23) The TypeScript SDK v1's SSEClientTransport (the 2024-11-05
// HTTP+SSE transport) → mcp-bridge serve -- examples/memos at /sse: the
// handshake, tools/list, a call, progress on the stream, and an
// elicitation round trip (memo_delete_memo asks for confirmation; the
// answer goes back by POST to the endpoint's message URL).
func TestTSv1SSEClientToServe(t *testing.T) {
	b := startBridge(t, serveOpts{Child: []string{env.memos, "-step-delay", "20ms"}})
	r := runDriver(t, "ts-v1-client.mjs", "--url", b.base+"/sse", "--transport", "sse",
		"--list",
		"--call", "memo_list_memos", "--args", `{"pageSize":1}`,
		"--progress", "--progress-tool", "memo_export_memos", "--progress-args", `{"steps":3}`,
		"--elicitation", "--elicitation-tool", "memo_delete_memo", "--elicitation-args", `{"name":"memos/private-draft"}`,
	)
	if r.Summary.Transport != "sse" {
		t.Errorf("driver transport %q, want sse", r.Summary.Transport)
	}
	if conn := step[connectStep](t, r, "connect"); conn.ProtocolVersion == "" {
		t.Error("no protocol version negotiated")
	}
	if list := step[listStep](t, r, "listTools"); !slices.Contains(list.Names, "memo_list_memos") {
		t.Errorf("tools/list = %q", list.Names)
	}
	if call := step[callStep](t, r, "call"); !strings.Contains(call.Text, "memos/") {
		t.Errorf("memo_list_memos = %q", call.Text)
	}
	// All three on the stream, each written as it came (20 ms apart). The
	// SDK's onprogress may see fewer: it runs notification handlers a
	// microtask after the message, and its SSE transport settles the
	// response before then; measured 1 to 3 of 3.
	if p := step[progressStep](t, r, "progress"); p.Wire != 3 || p.OnProgress < 1 {
		t.Errorf("%d progress notifications on the stream (%d to onprogress), want 3 (%+v)", p.Wire, p.OnProgress, p)
	}
	if e := step[roundTripStep](t, r, "elicitation"); e.HandlerCalls != 1 || e.Text != "deleted memos/private-draft" {
		t.Errorf("elicitation round trip: %d handler calls, %q", e.HandlerCalls, e.Text)
	}
}

// (issue 23) mcp-remote 0.15.1 --transport sse-only → serve's /sse: a host
// that only speaks stdio reaches serve through mcp-remote's SSE client.
func TestMCPRemoteSSEOnlyToServe(t *testing.T) {
	b := startBridge(t, serveOpts{Child: []string{env.memos}})
	t.Setenv("MCP_REMOTE_CONFIG_DIR", t.TempDir())
	remote := filepath.Join(env.nodeModules, "mcp-remote", "dist", "proxy.js")
	// mcp-remote loads a 1.5 MB bundle before it reads stdin: slow on a
	// loaded machine.
	r := runDriver(t, "ts-v1-client.mjs", "--timeout", "180000", "--request-timeout", "60000",
		"--list", "--call", "memo_list_memos", "--args", `{"pageSize":1}`,
		"--command", env.node, "--", remote, b.base+"/sse", "--allow-http", "--transport", "sse-only")
	if list := step[listStep](t, r, "listTools"); !slices.Contains(list.Names, "memo_list_memos") {
		t.Errorf("tools/list through mcp-remote = %q", list.Names)
	}
	if call := step[callStep](t, r, "call"); !strings.Contains(call.Text, "memos/") {
		t.Errorf("memo_list_memos through mcp-remote = %q", call.Text)
	}
	if !strings.Contains(b.log(), `"path":"/sse"`) {
		t.Error("the bridge's access log shows no request at /sse: mcp-remote did not use the SSE transport")
	}
}
