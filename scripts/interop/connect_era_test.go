//go:build interop

package interop

import (
	"path/filepath"
	"strings"
	"testing"
)

// (#21 item 7) A TS SDK v2 host pinned to 2026-07-28 that starts connect a
// second time adopting the first run's DiscoverResult (connect({prior}),
// what the SDK does when it starts a stdio server twice): the second
// connect's first request is tools/list, not server/discover. supergateway
// 4.0.0 answers it in 2025 shape (no resultType); connect must not read
// that as a 2026-07-28 remote, but probe, find the remote 2025-only and
// translate. It used to pass the results through, and the host rejected
// every one ("missing required resultType"). Stateful and stateless.
func TestConnectTSv2FirstRequestToolsListSupergateway(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"stateful", []string{"--stateful"}}, {"stateless", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			sg := filepath.Join(env.nodeModules, "supergateway", "dist", "index.js")
			_, addr := startDirect(t, "supergateway", func(addr string) []string {
				port := addr[strings.LastIndexByte(addr, ':')+1:]
				return append([]string{env.node, sg, "--stdio", strings.Join(serverEverythingStdio(), " "),
					"--outputTransport", "streamableHttp", "--port", port}, mode.flags...)
			})
			r := runConnect(t, "ts-v2-reconnect", "ts-v2-client.mjs", nil, "http://"+addr+"/mcp",
				"--reconnect",
				"--expect-version", "2026-07-28",
				"--list",
				"--call", "echo", "--args", `{"message":"first request tools/list"}`,
			)
			if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: first request tools/list" {
				t.Errorf("echo returned %q", c.Text)
			}
			// The log holds both connect processes; the second starts at
			// the last "mcp-bridge connect" line.
			second := r.log[strings.LastIndex(r.log, `"message":"mcp-bridge connect"`):]
			if !strings.Contains(second, "translating between protocol eras") || strings.Contains(second, `"era":"modern"`) {
				t.Errorf("supergateway serves 2025 only: the second connect must probe and translate; its log:\n%s", second)
			}
		})
	}
}
