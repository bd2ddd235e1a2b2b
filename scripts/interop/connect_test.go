//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The connect direction: a stdio host (a TypeScript SDK client with
// StdioClientTransport) launches `mcp-bridge connect URL`, which relays to
// a real remote Streamable HTTP server. The wire counts in the driver's
// summary are the lines the bridge wrote on its stdout.

// connectRun is a driver run through `mcp-bridge connect`.
type connectRun struct {
	*driverResult
	log string // the bridge's stderr (its debug log)
}

// runConnect runs a driver that launches `mcp-bridge connect --log-level
// debug FLAGS... URL` over stdio, the bridge's log going to the test's
// artifacts as connect-<name>.log. Besides the driver's own verdict it
// checks that the bridge ended cleanly: exit status 0 once the driver
// closed its stdin (by itself, or on the SIGTERM the SDK sends 2 s later —
// never needing the SIGKILL 2 s after that), and no data race, panic or
// fatal error in its log.
func runConnect(t *testing.T, name, script string, connectFlags []string, url string, args ...string) *connectRun {
	t.Helper()
	art := artifactDir(t)
	logPath := filepath.Join(art, "connect-"+name+".log")
	_ = os.Remove(logPath)
	argv := append([]string(nil), args...)
	argv = append(argv, "--stderr-file", logPath, "--command", env.bridge, "--", "connect", "--log-level", "debug")
	argv = append(argv, connectFlags...)
	argv = append(argv, url)
	r, err := execDriver(art, name, script, argv...)
	b, _ := os.ReadFile(logPath)
	cr := &connectRun{driverResult: r, log: string(b)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp-bridge connect log (%s):\n%s", logPath, tail(cr.log, 60))
		}
	})
	checkDriver(t, script, argv, r, err)
	checkLogClean(t, "mcp-bridge connect", cr.log)
	if c := r.Summary.Child; !c.clean() {
		t.Errorf("BRIDGE BUG: mcp-bridge connect did not exit cleanly once the host closed its stdin: %s "+
			"(the host SDK closes stdin, sends SIGTERM after 2 s and SIGKILL after 4 s; want exit status 0 before the SIGKILL)", c)
	}
	return cr
}

// checkLogClean fails the test if a bridge log shows a data race, a panic or
// a fatal runtime error.
func checkLogClean(t *testing.T, what, log string) {
	t.Helper()
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if i := strings.Index(log, bad); i >= 0 {
			t.Errorf("BRIDGE BUG: %s log contains %q:\n%s", what, bad, excerpt(log, i, 3000))
		}
	}
}

// serverEverythingHTTP starts server-everything 2026.8.31 in Streamable
// HTTP mode (stateful; port from $PORT, path /mcp). A fresh one per test:
// its event store never evicts.
func serverEverythingHTTP(t *testing.T) (url string, p *proc) {
	t.Helper()
	script := filepath.Join(env.nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	p, addr := startDirectEnv(t, "server-everything-http",
		func(addr string) []string { return []string{"PORT=" + addr[strings.LastIndexByte(addr, ':')+1:]} },
		func(string) []string { return []string{env.node, script, "streamableHttp"} })
	return "http://" + addr + "/mcp", p
}

// checkSessionDeleted: server-everything logs the DELETE that ends a
// session ("Received session termination request"); connect sends it when
// the host goes away.
func checkSessionDeleted(t *testing.T, server *proc) {
	t.Helper()
	if !strings.Contains(server.log(), "Received session termination request") {
		t.Errorf("BRIDGE BUG: mcp-bridge connect exited without deleting its session at server-everything (no DELETE in the server's log)")
	}
}

// goSDKStateless starts testdata/gosdkserver (go-sdk v1.8.0, stateless
// Streamable HTTP): modern-only (the SDK restricted to 2026-07-28) or, with
// modernOnly false, the SDK's plain stateless mode that serves both eras.
func goSDKStateless(t *testing.T, modernOnly bool) (url string, p *proc) {
	t.Helper()
	p, addr := startDirect(t, "gosdkserver", func(addr string) []string {
		return []string{env.gosdk, "-http", addr, "-modern-only=" + strconv.FormatBool(modernOnly)}
	})
	return "http://" + addr + "/mcp", p
}

// goSDKStateful starts testdata/gosdkserver -stateful: the Go SDK's
// default (session, 2025-only) Streamable HTTP handler.
func goSDKStateful(t *testing.T) (url string, p *proc) {
	t.Helper()
	p, addr := startDirect(t, "gosdkserver-stateful", func(addr string) []string {
		return []string{env.gosdk, "-http", addr, "-stateful"}
	})
	return "http://" + addr + "/mcp", p
}

// checkProgress: every call's notifications were written by the bridge
// (the wire count is lines on its stdout), in order. Through stdio the v1
// SDK runs progress handlers in a microtask, so a response that arrives in
// the same stdout chunk as the last notification can resolve the call
// first: onprogress may be one short of the wire (docs/interop.md).
func checkProgress(t *testing.T, p progressStep, calls, steps int) {
	t.Helper()
	if p.Wire != calls*steps {
		t.Errorf("progress: %d notifications/progress lines on the bridge's stdout, want %d×%d", p.Wire, calls, steps)
	}
	results := p.Calls
	if calls == 1 {
		results = append(results, p.progressCall)
	}
	if len(results) != calls {
		t.Fatalf("progress: %d call results, want %d", len(results), calls)
	}
	for i, c := range results {
		if c.OnProgress < steps-1 || c.OnProgress > steps {
			t.Errorf("progress call %d: onprogress ran %d times, want %d (or %d, see docs/interop.md)", i, c.OnProgress, steps, steps-1)
		}
		for j, ev := range c.Events {
			if ev.Progress < 0 || (j > 0 && ev.Progress <= c.Events[j-1].Progress) || ev.Total == nil {
				t.Errorf("progress call %d event %d = %+v: not increasing, or no total", i, j, ev)
			}
		}
	}
}

// (connect 1) TS SDK v1 stdio host → mcp-bridge connect → server-everything
// 2026.8.31 over Streamable HTTP (legacy, stateful): the same era on both
// sides, so the bridge relays as is — the host's initialize and
// capabilities reach the server, server→client requests (roots on the GET
// stream, sampling and elicitation on the call's POST stream) reach the
// host and its answers go back, progress arrives line by line.
func TestConnectTSv1ClientToServerEverything(t *testing.T) {
	url, server := serverEverythingHTTP(t)
	const steps, concurrent = 5, 3
	r := runConnect(t, "ts-v1", "ts-v1-client.mjs", nil, url,
		"--roots",
		"--list",
		"--echo", "hello through connect",
		"--progress", "--progress-args", `{"duration":1,"steps":5}`, "--progress-concurrency", "3",
		"--sampling",
		"--elicitation",
		"--ping",
	)
	s := &r.Summary
	if conn := step[connectStep](t, r.driverResult, "connect"); conn.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q through connect, want 2025-11-25", conn.ProtocolVersion)
	}
	if s.Server.Name != "mcp-servers/everything" {
		t.Errorf("serverInfo.name %q, want mcp-servers/everything", s.Server.Name)
	}
	if strings.Contains(r.log, "translating between protocol eras") {
		t.Errorf("a 2025 host on a 2025 server must be relayed as is, but the bridge translated:\n%s", tail(r.log, 20))
	}
	// roots/list comes on the session's GET stream, 350 ms after
	// initialization, with no request in flight: the bridge must keep that
	// stream and write the request to the host.
	roots := step[rootsStep](t, r.driverResult, "roots")
	if roots.HandlerCalls < 1 || !strings.Contains(roots.Text, rootURI) {
		t.Errorf("roots: the host answered roots/list %d times and get-roots-list says %q; want >= 1 and %s", roots.HandlerCalls, roots.Text, rootURI)
	}
	list := step[listStep](t, r.driverResult, "listTools")
	for _, name := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} {
		if !slices.Contains(list.Names, name) {
			t.Errorf("tools/list lacks %q: the host's capabilities must reach server-everything (got %q)", name, list.Names)
		}
	}
	if echo := step[callStep](t, r.driverResult, "echo"); echo.Text != "Echo: hello through connect" {
		t.Errorf("echo returned %q", echo.Text)
	}
	checkProgress(t, step[progressStep](t, r.driverResult, "progress"), concurrent, steps)
	smp := step[roundTripStep](t, r.driverResult, "sampling")
	if smp.HandlerCalls != 1 || !strings.Contains(smp.Text, samplingReply) || s.Wire.Messages["sampling/createMessage"] != 1 {
		t.Errorf("sampling: %d handler calls, %d sampling/createMessage lines, result %q; want 1, 1 and the host's reply",
			smp.HandlerCalls, s.Wire.Messages["sampling/createMessage"], smp.Text)
	}
	eli := step[roundTripStep](t, r.driverResult, "elicitation")
	if eli.HandlerCalls != 1 || len(s.Handled.Elicitation) != 1 || s.Handled.Elicitation[0].Fields != 13 ||
		!strings.Contains(eli.Text, "Name: "+elicitName) || s.Wire.Messages["elicitation/create"] != 1 {
		t.Errorf("elicitation: %d handler calls (%+v), %d elicitation/create lines, result %q",
			eli.HandlerCalls, s.Handled.Elicitation, s.Wire.Messages["elicitation/create"], eli.Text)
	}
	step[stepBase](t, r.driverResult, "ping")
	checkSessionDeleted(t, server)
}

// A stdio host ends a session the way the MCP spec (and both TypeScript
// SDKs) do it: close the server's stdin, SIGTERM after 2 s, SIGKILL after
// 2 s more. Here the host has cancelled a long call first
// (notifications/cancelled; server-everything's
// trigger-long-running-operation ignores cancellation and keeps its POST
// stream open for 20 s). The bridge owes the host nothing for a cancelled
// request, and the host's SIGTERM means "stop now": either way it must exit
// 0, and DELETE its session, before the SIGKILL. Fails today, see
// docs/interop.md "Bridge problems found" (2 and 3).
func TestConnectExitAfterHostCancel(t *testing.T) {
	url, server := serverEverythingHTTP(t)
	r := runConnect(t, "ts-v1", "ts-v1-client.mjs", nil, url,
		"--echo", "before cancel",
		"--cancel", "--cancel-args", `{"duration":20,"steps":40}`,
		"--after-cancel-tool", "echo", "--after-cancel-args", `{"message":"after cancel"}`,
	)
	c := step[cancelStep](t, r.driverResult, "cancel")
	if c.CancelledSent != 1 || c.After == nil || c.After.Text != "Echo: after cancel" {
		t.Errorf("cancel: %d notifications/cancelled sent, after: %+v", c.CancelledSent, c.After)
	}
	checkSessionDeleted(t, server)
}

// (connect 2) TS SDK v2 host pinned to 2026-07-28 → mcp-bridge connect →
// modern remotes, relayed as is: discover, tools, progress, an
// input_required round trip answered by the host's handlers, and a
// subscriptions/listen stream that carries a tools/list_changed.
func TestConnectTSv2ModernClient(t *testing.T) {
	t.Run("go-sdk-stateless", func(t *testing.T) {
		// The Go SDK's stateless handler, not restricted to 2026-07-28 (it
		// would also serve a 2025 client, statelessly).
		url, _ := goSDKStateless(t, false)
		const steps, concurrent = 4, 2
		r := runConnect(t, "ts-v2", "ts-v2-client.mjs", nil, url,
			"--expect-version", "2026-07-28",
			"--discover", "--list",
			"--call", "echo", "--args", `{"message":"modern through connect"}`,
			"--progress", "--progress-tool", "progress", "--progress-args", `{"steps":4}`, "--progress-concurrency", "2",
			"--sampling", "--sampling-tool", "ask_sampling",
			"--elicitation", "--elicitation-tool", "ask_name",
			"--listen", "--listen-trigger-tool", "toggle_tool",
		)
		checkModernStdio(t, r)
		if d := step[discoverStep](t, r.driverResult, "discover"); d.ServerInfo == nil || d.ServerInfo.Name != "interop-gosdk-stateless" {
			t.Errorf("server/discover serverInfo %+v, want interop-gosdk-stateless", d.ServerInfo)
		}
		if list := step[listStep](t, r.driverResult, "listTools"); !slices.Contains(list.Names, "ask_name") || !slices.Contains(list.Names, "toggle_tool") {
			t.Errorf("tools/list: %q", list.Names)
		}
		if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: modern through connect" {
			t.Errorf("echo returned %q", c.Text)
		}
		checkProgress(t, step[progressStep](t, r.driverResult, "progress"), concurrent, steps)
		if smp := step[roundTripStep](t, r.driverResult, "sampling"); smp.HandlerCalls != 1 || smp.Text != "Sampling response: "+samplingReply {
			t.Errorf("ask_sampling (input_required): %d handler calls, result %q", smp.HandlerCalls, smp.Text)
		}
		if eli := step[roundTripStep](t, r.driverResult, "elicitation"); eli.HandlerCalls != 1 || eli.Text != "Hello, "+elicitName+"!" {
			t.Errorf("ask_name (input_required): %d handler calls, result %q", eli.HandlerCalls, eli.Text)
		}
		for _, m := range []string{"sampling/createMessage", "elicitation/create"} {
			if n := r.Summary.Wire.Messages[m]; n != 0 {
				t.Errorf("a 2026-07-28 host got %d JSON-RPC %s requests; input comes as input_required results", n, m)
			}
		}
		checkListenHTTP(t, r.driverResult, "toolsListChanged", "notifications/tools/list_changed")
	})
	t.Run("mcp-proxy", func(t *testing.T) {
		// mcp-proxy 6.7.19 serves 2026-07-28 on /mcp (--modern, the default)
		// in front of the go-sdk everything-server on stdio. Its own
		// progress relay loses a last notification that races the response
		// (docs: peers); test_tool_with_progress pauses 50 ms after each.
		proxy := filepath.Join(env.nodeModules, "mcp-proxy", "dist", "bin", "mcp-proxy.mjs")
		_, addr := startDirect(t, "mcp-proxy", func(addr string) []string {
			port := addr[strings.LastIndexByte(addr, ':')+1:]
			return []string{env.node, proxy, "--port", port, "--host", "127.0.0.1", "--", env.everything}
		})
		url := "http://" + addr + "/mcp"
		r := runConnect(t, "ts-v2", "ts-v2-client.mjs", nil, url,
			"--expect-version", "2026-07-28",
			"--discover", "--list",
			"--call", "test_simple_text",
			"--progress", "--progress-tool", "test_tool_with_progress", "--progress-concurrency", "2",
			"--listen", "--listen-trigger-tool", "test_trigger_tool_change",
		)
		checkModernStdio(t, r)
		if d := step[discoverStep](t, r.driverResult, "discover"); d.ServerInfo == nil || d.ServerInfo.Name != "mcp-conformance-test-server" {
			t.Errorf("server/discover serverInfo %+v, want mcp-conformance-test-server", d.ServerInfo)
		}
		if list := step[listStep](t, r.driverResult, "listTools"); !slices.Contains(list.Names, "test_trigger_tool_change") {
			t.Errorf("tools/list: %q", list.Names)
		}
		if c := step[callStep](t, r.driverResult, "call"); c.Text != "This is a simple text response for testing." {
			t.Errorf("test_simple_text returned %q", c.Text)
		}
		checkProgress(t, step[progressStep](t, r.driverResult, "progress"), 2, 3)
		checkListenHTTP(t, r.driverResult, "toolsListChanged", "notifications/tools/list_changed")
	})
}

// checkModernStdio: the host negotiated 2026-07-28 by server/discover and
// never sent initialize, and the bridge relayed without translating.
func checkModernStdio(t *testing.T, r *connectRun) {
	t.Helper()
	s := &r.Summary
	if s.ProtocolVersion != "2026-07-28" || s.Era != "modern" {
		t.Errorf("negotiated %q (era %q) through connect, want 2026-07-28 (modern)", s.ProtocolVersion, s.Era)
	}
	step[stepBase](t, r.driverResult, "expectVersion")
	if s.Wire.Sent["initialize"] != 0 || s.Wire.Sent["server/discover"] == 0 {
		t.Errorf("want server/discover and no initialize, sent %v", s.Wire.Sent)
	}
	if strings.Contains(r.log, "translating between protocol eras") {
		t.Errorf("a 2026-07-28 host on a 2026-07-28 server must be relayed as is, but the bridge translated")
	}
}

// (translation 4) TS SDK v1 host (2025 only) → mcp-bridge connect → the Go
// SDK stateless server restricted to 2026-07-28: the bridge must translate.
// It answers initialize from server/discover, puts the 2026 _meta envelope
// on every request (the server refuses anything else), turns input_required
// into real elicitation/create and sampling/createMessage requests to the
// host and retries with its answers, and serves the host's change
// notifications from a subscriptions/listen stream.
func TestConnectTSv1ClientToModernOnlyGoSDK(t *testing.T) {
	url, server := goSDKStateless(t, true)

	// Without translation a 2025 client cannot use this server at all.
	direct, err := execDriver(artifactDir(t), "ts-v1-direct", "ts-v1-client.mjs", "--url", url, "--list")
	if err != nil {
		t.Fatalf("direct v1 run: %v", err)
	}
	if direct.Summary.OK {
		t.Fatalf("the TS v1 client works against the modern-only server directly; it is not modern-only, the test proves nothing")
	}

	const steps, concurrent = 4, 2
	r := runConnect(t, "ts-v1", "ts-v1-client.mjs", nil, url,
		"--list",
		"--echo", "legacy host, modern server",
		"--progress", "--progress-tool", "progress", "--progress-args", `{"steps":4}`, "--progress-concurrency", "2",
		"--sampling", "--sampling-tool", "ask_sampling",
		"--elicitation", "--elicitation-tool", "ask_name",
		"--list-changed", "--list-changed-tool", "toggle_tool",
		"--ping",
	)
	s := &r.Summary
	if conn := step[connectStep](t, r.driverResult, "connect"); conn.ProtocolVersion != "2025-11-25" {
		t.Errorf("the v1 host negotiated %q, want 2025-11-25 (its own)", conn.ProtocolVersion)
	}
	if s.Server.Name != "interop-gosdk-stateless" {
		t.Errorf("initialize serverInfo %+v, want interop-gosdk-stateless (from server/discover)", s.Server)
	}
	if !strings.Contains(r.log, "legacy host on a modern remote") {
		t.Errorf("the bridge log does not say it translated (legacy host on a modern remote)")
	}
	if list := step[listStep](t, r.driverResult, "listTools"); !slices.Contains(list.Names, "ask_name") || !slices.Contains(list.Names, "progress") {
		t.Errorf("tools/list: %q", list.Names)
	}
	if c := step[callStep](t, r.driverResult, "echo"); c.Text != "Echo: legacy host, modern server" {
		t.Errorf("echo returned %q", c.Text)
	}
	checkProgress(t, step[progressStep](t, r.driverResult, "progress"), concurrent, steps)
	smp := step[roundTripStep](t, r.driverResult, "sampling")
	if smp.HandlerCalls != 1 || s.Wire.Messages["sampling/createMessage"] != 1 || smp.Text != "Sampling response: "+samplingReply {
		t.Errorf("ask_sampling: the server's input_required must reach the host as one sampling/createMessage (got %d, handler %d) and the retry carry its answer; result %q",
			s.Wire.Messages["sampling/createMessage"], smp.HandlerCalls, smp.Text)
	}
	eli := step[roundTripStep](t, r.driverResult, "elicitation")
	if eli.HandlerCalls != 1 || s.Wire.Messages["elicitation/create"] != 1 || eli.Text != "Hello, "+elicitName+"!" {
		t.Errorf("ask_name: the server's input_required must reach the host as one elicitation/create (got %d, handler %d) and the retry carry its answer; result %q",
			s.Wire.Messages["elicitation/create"], eli.HandlerCalls, eli.Text)
	}
	lc := step[listChangedStep](t, r.driverResult, "listChanged")
	if lc.Received < 1 || !slices.Contains(lc.Names, "extra_tool") {
		t.Errorf("toggle_tool (%q): %d notifications/tools/list_changed reached the host, tools now %q; want >= 1 and extra_tool",
			lc.Text, lc.Received, lc.Names)
	}
	step[stepBase](t, r.driverResult, "ping")
	// The server logs the MCP-Protocol-Version of every POST: after the
	// era was settled, every request must have been a 2026-07-28 one.
	var legacyCalls []string
	for _, l := range strings.Split(server.log(), "\n") {
		if strings.Contains(l, `method="tools/`) && !strings.Contains(l, `version="2026-07-28"`) {
			legacyCalls = append(legacyCalls, l)
		}
	}
	if len(legacyCalls) > 0 {
		t.Errorf("the server got tools requests that were not 2026-07-28:\n%s", strings.Join(legacyCalls, "\n"))
	}
	t.Logf("bridge stdout carried %v", fmt.Sprint(s.Wire.Messages))
}

// (connect, issue 11 a) TS SDK v2 host pinned to 2026-07-28 → mcp-bridge
// connect → a 2025-only Go SDK server whose tool asks for sampling mid-call
// and then reports progress. The host answers the input round with a retry
// under a new id and a new progressToken; the server still reports under
// the first round's token. Every progress notification must reach the host
// under the retry's token (the SDK drops the others: "Received a progress
// notification for an unknown token").
func TestConnectTSv2ProgressAfterInputRound(t *testing.T) {
	url, _ := goSDKStateful(t)
	const steps = 3
	r := runConnect(t, "ts-v2", "ts-v2-client.mjs", nil, url,
		"--expect-version", "2026-07-28",
		"--progress", "--progress-tool", "sample_progress", "--progress-args", `{"steps":3}`,
	)
	if !strings.Contains(r.log, "translating between protocol eras") {
		t.Errorf("a 2026-07-28 host on a 2025-only server must be translated")
	}
	p := step[progressStep](t, r.driverResult, "progress")
	if p.Text != "sampled, then 3 steps" {
		t.Errorf("sample_progress returned %q", p.Text)
	}
	// The SDK reports each input round to onprogress itself ({progress:
	// round}, no total); the server's notifications carry a total.
	var fromServer int
	for _, ev := range p.Events {
		if ev.Total != nil {
			fromServer++
		}
	}
	if p.Wire != steps || fromServer != steps {
		t.Errorf("progress after the input round: %d notifications on the bridge's stdout (by token %v), %d reached onprogress; want %d and %d",
			p.Wire, r.Summary.Wire.ProgressByToken, fromServer, steps, steps)
	}
}

// (connect, issue 11 b) TS SDK v2 host pinned to 2026-07-28 (declaring
// roots) → mcp-bridge connect → server-everything over Streamable HTTP,
// which speaks only 2025 and sends roots/list on its GET stream 350 ms
// after initialization, for itself. A long call is in flight by then; it
// must not be cut into an input round for that roots/list (the SDK reports
// each round to onprogress as {progress: round} without a total). The
// bridge answers the roots/list itself: the host has given no roots yet,
// so with -32602, which server-everything logs as a failure.
func TestConnectTSv2GETStreamRootsNotInACall(t *testing.T) {
	url, server := serverEverythingHTTP(t)
	const steps = 4
	r := runConnect(t, "ts-v2", "ts-v2-client.mjs", nil, url,
		"--expect-version", "2026-07-28",
		"--roots",
		"--progress", "--progress-tool", "trigger-long-running-operation", "--progress-args", `{"duration":2,"steps":4}`,
	)
	p := step[progressStep](t, r.driverResult, "progress")
	var rounds int
	for _, ev := range p.Events {
		if ev.Total == nil {
			rounds++
		}
	}
	if rounds != 0 || r.Summary.Handled.Roots != 0 {
		t.Errorf("trigger-long-running-operation was cut into %d input round(s), the host answered roots/list %d times; want 0 and 0", rounds, r.Summary.Handled.Roots)
	}
	if p.Wire != steps || len(p.Events) < steps-1 {
		t.Errorf("progress: %d lines on the bridge's stdout, %d reached onprogress; want %d", p.Wire, len(p.Events), steps)
	}
	if !strings.Contains(server.log(), "Failed to request roots") {
		t.Errorf("server-everything's roots/list was not answered with an error by the bridge (server log:\n%s)", tail(server.log(), 20))
	}
}

// (connect, issue 11 c) TS SDK v2 host pinned to 2026-07-28 → mcp-bridge
// connect → supergateway 4.0.0 --stateful in front of server-everything on
// stdio. supergateway answers server/discover with HTTP 404 and -32601; a
// 2026-07-28 server must implement server/discover, so that is a 2025-era
// server and the bridge translates (it used to read -32601 as modern, and
// the host got "the server did not offer 2026-07-28"). supergateway binds
// every interface (it has no host flag); the test reaches it on 127.0.0.1.
func TestConnectTSv2ToSupergatewayStateful(t *testing.T) {
	sg := filepath.Join(env.nodeModules, "supergateway", "dist", "index.js")
	_, addr := startDirect(t, "supergateway", func(addr string) []string {
		port := addr[strings.LastIndexByte(addr, ':')+1:]
		return []string{env.node, sg, "--stdio", strings.Join(serverEverythingStdio(), " "),
			"--outputTransport", "streamableHttp", "--stateful", "--port", port}
	})
	const steps = 3
	r := runConnect(t, "ts-v2", "ts-v2-client.mjs", nil, "http://"+addr+"/mcp",
		"--expect-version", "2026-07-28",
		"--list",
		"--call", "echo", "--args", `{"message":"through supergateway"}`,
		"--progress", "--progress-tool", "trigger-long-running-operation", "--progress-args", `{"duration":1,"steps":3}`,
		"--sampling",
	)
	if !strings.Contains(r.log, "translating between protocol eras") {
		t.Errorf("supergateway serves 2025 only: the bridge must translate")
	}
	if s := r.Summary.Server; s.Name != "mcp-servers/everything" {
		t.Errorf("serverInfo %+v, want server-everything's", s)
	}
	if c := step[callStep](t, r.driverResult, "call"); c.Text != "Echo: through supergateway" {
		t.Errorf("echo returned %q", c.Text)
	}
	p := step[progressStep](t, r.driverResult, "progress")
	if p.Wire != steps || len(p.Events) < steps-1 {
		t.Errorf("progress: %d lines on the bridge's stdout, %d reached onprogress; want %d", p.Wire, len(p.Events), steps)
	}
	if smp := step[roundTripStep](t, r.driverResult, "sampling"); smp.HandlerCalls != 1 || !strings.Contains(smp.Text, samplingReply) {
		t.Errorf("sampling through input_required: %d handler calls, result %q", smp.HandlerCalls, smp.Text)
	}
}
