//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// What the drivers answer with (drivers/lib/common.mjs).
const (
	samplingReply = "interop sampling reply from the ts driver"
	elicitName    = "Interop Driver"
	rootURI       = "file:///tmp/mcp-bridge-interop-root"
)

func serverEverythingStdio() []string {
	return []string{env.node, filepath.Join(env.nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}
}

// (a) TS SDK v1 client → mcp-bridge serve → server-everything 2026.8.31 (stdio).
// A legacy (2025-11-25) session: the bridge gives it its own child and must
// carry the client's capabilities to it, relay progress on the POST's SSE
// stream, carry sampling and elicitation requests to the client and the
// answers back, and cancellation.
func TestTSv1ClientToServerEverything(t *testing.T) {
	b := startBridge(t, serveOpts{Child: serverEverythingStdio()})
	const steps, concurrent = 5, 3
	r := runDriver(t, "ts-v1-client.mjs", "--url", b.URL,
		"--roots",
		"--list",
		"--echo", "hello through mcp-bridge",
		"--progress", "--progress-args", `{"duration":1,"steps":5}`, "--progress-concurrency", "3",
		"--sampling",
		"--elicitation",
		"--logging", "--logging-stream", "GET",
		"--cancel", "--cancel-args", `{"duration":20,"steps":40}`,
		"--after-cancel-tool", "echo", "--after-cancel-args", `{"message":"after cancel"}`,
	)
	s := &r.Summary
	t.Logf("messages by HTTP stream: %v", s.Wire.ByStream)

	conn := step[connectStep](t, r, "connect")
	if conn.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated protocol version %q, want 2025-11-25 (the SDK's latest)", conn.ProtocolVersion)
	}
	if conn.SessionID == "" || len(s.Wire.HTTP.SessionIDs) != 1 {
		t.Errorf("want exactly one Mcp-Session-Id for the legacy session, got %q", s.Wire.HTTP.SessionIDs)
	}
	if s.Server.Name != "mcp-servers/everything" {
		t.Errorf("serverInfo.name %q, want mcp-servers/everything", s.Server.Name)
	}

	// server-everything asks for the client's roots 350 ms after
	// initialization, when no request is in flight: a server→client request
	// that only the GET stream can carry; the answer must get back to it.
	roots := step[rootsStep](t, r, "roots")
	if roots.ByStream["GET roots/list"] < 1 {
		t.Errorf("server-everything's roots/list did not arrive on the GET stream; by stream %v", roots.ByStream)
	}
	if !strings.Contains(roots.Text, rootURI) {
		t.Errorf("get-roots-list does not show the client's root %s: %q", rootURI, roots.Text)
	}

	list := step[listStep](t, r, "listTools")
	for _, name := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} {
		if !slices.Contains(list.Names, name) {
			t.Errorf("tools/list lacks %q: server-everything lists the sampling/elicitation tools only when the client's capabilities reach it (got %q)", name, list.Names)
		}
	}

	if echo := step[callStep](t, r, "echo"); echo.Text != "Echo: hello through mcp-bridge" {
		t.Errorf("echo returned %q", echo.Text)
	}

	// Three trigger-long-running-operation calls at once on one session,
	// each with its own progress token and POST SSE stream.
	p := step[progressStep](t, r, "progress")
	if p.Wire != concurrent*steps {
		t.Errorf("progress: %d notifications/progress on the wire (SSE events of the POSTs), want %d×%d", p.Wire, concurrent, steps)
	}
	if s.Wire.ByStream["POST notifications/progress"] < concurrent*steps {
		t.Errorf("progress must ride each call's POST SSE stream; by stream: %v", s.Wire.ByStream)
	}
	if len(p.Calls) != concurrent {
		t.Fatalf("progress: %d call results, want %d", len(p.Calls), concurrent)
	}
	for i, c := range p.Calls {
		if c.OnProgress != steps {
			t.Errorf("progress call %d: onprogress called %d times, want %d (wire total %d)", i, c.OnProgress, steps, p.Wire)
		}
		for j, ev := range c.Events {
			if ev.Progress != float64(j+1) || ev.Total == nil || *ev.Total != steps {
				t.Errorf("progress call %d event %d = %+v, want progress %d of %d", i, j, ev, j+1, steps)
			}
		}
		if !strings.Contains(c.Text, "Long running operation completed") {
			t.Errorf("progress call %d result %q", i, c.Text)
		}
	}

	smp := step[roundTripStep](t, r, "sampling")
	if smp.HandlerCalls != 1 {
		t.Errorf("sampling/createMessage reached the client %d times, want 1", smp.HandlerCalls)
	}
	if !strings.Contains(smp.Text, samplingReply) {
		t.Errorf("trigger-sampling-request result does not carry the client's sampling answer %q: %q", samplingReply, smp.Text)
	}

	eli := step[roundTripStep](t, r, "elicitation")
	if eli.HandlerCalls != 1 {
		t.Errorf("elicitation/create reached the client %d times, want 1", eli.HandlerCalls)
	}
	if len(s.Handled.Elicitation) != 1 || s.Handled.Elicitation[0].Fields != 13 {
		t.Errorf("want one 13-field elicitation form, got %+v", s.Handled.Elicitation)
	}
	if !strings.Contains(eli.Text, "User provided the requested information") || !strings.Contains(eli.Text, "Name: "+elicitName) {
		t.Errorf("trigger-elicitation-request result does not carry the accepted content: %q", eli.Text)
	}

	// toggle-simulated-logging: later messages relate to no request, so they
	// must come on the session's GET stream.
	if lg := step[loggingStep](t, r, "logging"); lg.OnStream < 1 {
		t.Errorf("no notifications/message arrived on the GET stream (received %d in all; by stream %v)", lg.Received, s.Wire.ByStream)
	}

	c := step[cancelStep](t, r, "cancel")
	if c.ProgressBeforeAbort < 1 || c.CancelledSent != 1 {
		t.Errorf("cancel: progress before abort %d, notifications/cancelled sent %d; want >=1 and 1", c.ProgressBeforeAbort, c.CancelledSent)
	}
	if c.After == nil || c.After.Text != "Echo: after cancel" {
		t.Errorf("the session did not work after a cancelled call: %+v", c.After)
	}
	if got := s.Wire.Acked["notifications/cancelled"]; got != 1 {
		t.Errorf("notifications/cancelled accepted by the bridge %d times, want 1", got)
	}
}

// (a, second peer) TS SDK v1 client → mcp-bridge serve → examples/memos,
// legacy era: progress, elicitation as a server→client request, and a
// cancellation whose arrival at the child is visible in memo_debug_stats
// (memos only counts a cancel that names one of its in-flight requests, so
// this also checks the bridge's id remapping of notifications/cancelled).
// Twice: memos dual-era (pass-through, a child per session) and memos
// -legacy=false (modern only: the bridge translates the session — initialize
// from server/discover, _meta on every request, input_required turned into a
// real elicitation/create, the cancel into a closed request).
func TestTSv1ClientToMemos(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"dual-era", []string{"-dynamic-tools"}},
		{"modern-only-translated", []string{"-legacy=false", "-dynamic-tools"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBridge(t, serveOpts{Child: append([]string{env.memos}, tc.flags...)})
			r := runDriver(t, "ts-v1-client.mjs", "--url", b.URL,
				"--list",
				"--call", "memo_list_memos", "--args", `{"pageSize":1,"filter":"visibility != \"PRIVATE\""}`,
				"--progress", "--progress-tool", "memo_export_memos", "--progress-args", `{"steps":4}`, "--progress-concurrency", "2",
				"--elicitation", "--elicitation-tool", "memo_delete_memo", "--elicitation-args", `{"name":"memos/shopping-list"}`,
				"--list-changed", "--list-changed-tool", "memo_toggle_beta",
				"--ping",
				"--cancel", "--cancel-tool", "memo_export_memos", "--cancel-args", `{"steps":100}`,
				"--after-cancel-tool", "memo_debug_stats", "--after-cancel-until", "cancelled",
			)
			if conn := step[connectStep](t, r, "connect"); conn.ProtocolVersion != "2025-11-25" || conn.SessionID == "" {
				t.Errorf("want a 2025-11-25 session with an id, got %+v", conn)
			}
			if list := step[listStep](t, r, "listTools"); !slices.Contains(list.Names, "memo_delete_memo") || !slices.Contains(list.Names, "memo_export_memos") {
				t.Errorf("tools/list: %q", list.Names)
			}
			if c := step[callStep](t, r, "call"); !strings.Contains(c.Text, `"name":"memos/example-public-memo"`) || strings.Contains(c.Text, "PRIVATE") {
				t.Errorf("memo_list_memos (pageSize 1, visibility != PRIVATE) returned %q, want only memos/example-public-memo", c.Text)
			}
			p := step[progressStep](t, r, "progress")
			if p.Wire != 8 || len(p.Calls) != 2 {
				t.Errorf("2 concurrent memo_export_memos {steps:4}: %d progress notifications on the wire, %d results; want 8, 2", p.Wire, len(p.Calls))
			}
			for i, c := range p.Calls {
				if c.OnProgress != 4 || c.Text != "exported 11 memos" {
					t.Errorf("progress call %d: onprogress %d, result %q; want 4, %q", i, c.OnProgress, c.Text, "exported 11 memos")
				}
			}
			eli := step[roundTripStep](t, r, "elicitation")
			if eli.HandlerCalls != 1 || eli.Text != "deleted memos/shopping-list" {
				t.Errorf("elicitation: %d handler calls, result %q; want 1, %q", eli.HandlerCalls, eli.Text, "deleted memos/shopping-list")
			}
			if n := r.Summary.Wire.Messages["elicitation/create"]; n != 1 {
				t.Errorf("the legacy client must get memo_delete_memo's question as one elicitation/create request, got %d", n)
			}
			// memo_toggle_beta changes the tool list; the session's GET
			// stream must carry notifications/tools/list_changed (for the
			// modern-only child the bridge serves it from a
			// subscriptions/listen stream of the session).
			lc := step[listChangedStep](t, r, "listChanged")
			if lc.Received < 1 || lc.Wire < 1 || !slices.Contains(lc.Names, "memo_beta_echo") {
				t.Errorf("memo_toggle_beta (%q): %d notifications/tools/list_changed (%d on the wire), tools now %q; want >= 1 and memo_beta_echo",
					lc.Text, lc.Received, lc.Wire, lc.Names)
			}
			if r.Summary.Wire.ByStream["GET notifications/tools/list_changed"] < 1 {
				t.Errorf("notifications/tools/list_changed must come on the session's GET stream; by stream %v", r.Summary.Wire.ByStream)
			}
			step[stepBase](t, r, "ping")
			c := step[cancelStep](t, r, "cancel")
			if c.CancelledSent != 1 {
				t.Errorf("the v1 SDK sent %d notifications/cancelled, want 1", c.CancelledSent)
			}
			if st := afterStats(t, c); st.Cancelled != 1 {
				t.Errorf("memos counted %d cancelled requests within 5s of the client aborting one, want 1 (notifications/cancelled lost, or its requestId not mapped to the child's id); stats %s",
					st.Cancelled, c.After.StructuredContent)
			}
		})
	}
}

// (b) TS SDK v2 client pinned to 2026-07-28 → mcp-bridge serve → go-sdk
// conformance everything-server (stdio). Modern clients share the one child:
// no session, per-request _meta, server/discover; input the server needs
// comes back through input_required results (MRTR), not server→client
// requests.
func TestTSv2ModernClientToEverythingServer(t *testing.T) {
	b := startBridge(t, serveOpts{Child: []string{env.everything}})
	r := runDriver(t, "ts-v2-client.mjs", "--url", b.URL,
		"--expect-version", "2026-07-28",
		"--discover", "--list",
		"--call", "test_simple_text",
		"--progress", "--progress-tool", "test_tool_with_progress",
		"--roots", "--elicitation", "--elicitation-tool", "test_input_required_result_multiple_inputs",
	)
	checkModern(t, r)
	d := step[discoverStep](t, r, "discover")
	if d.ServerInfo == nil || d.ServerInfo.Name != "mcp-conformance-test-server" {
		t.Errorf("server/discover serverInfo %+v, want mcp-conformance-test-server", d.ServerInfo)
	}
	list := step[listStep](t, r, "listTools")
	for _, name := range []string{"test_simple_text", "test_tool_with_progress"} {
		if !slices.Contains(list.Names, name) {
			t.Errorf("tools/list lacks %q: %q", name, list.Names)
		}
	}
	if c := step[callStep](t, r, "call"); c.Text != "This is a simple text response for testing." {
		t.Errorf("test_simple_text returned %q", c.Text)
	}
	p := step[progressStep](t, r, "progress")
	if p.Wire != 3 || p.OnProgress != 3 {
		t.Errorf("test_tool_with_progress: %d progress notifications on the wire, %d via onprogress; want 3 and 3", p.Wire, p.OnProgress)
	}
	// MRTR: one input_required result asking for elicitation, sampling and
	// roots at once; the SDK answers and retries with requestState.
	mrtr := step[roundTripStep](t, r, "elicitation")
	if want := samplingReply + " " + elicitName + " — 1 root(s) visible"; mrtr.Text != want {
		t.Errorf("test_input_required_result_multiple_inputs returned %q, want %q", mrtr.Text, want)
	}
}

// (b) TS SDK v2 client pinned to 2026-07-28 → mcp-bridge serve →
// examples/memos (dual-era): the seed article's memo_list_memos call, three
// concurrent progress calls on the shared child, an input_required (MRTR)
// elicitation round trip, and a cancellation: the v2 SDK aborts by closing
// the response stream, which the bridge must turn into notifications/cancelled
// for the child (memo_debug_stats counts it).
func TestTSv2ModernClientToMemos(t *testing.T) {
	b := startBridge(t, serveOpts{Child: []string{env.memos}})
	const steps, concurrent = 3, 3
	r := runDriver(t, "ts-v2-client.mjs", "--url", b.URL,
		"--expect-version", "2026-07-28",
		"--discover", "--list",
		"--call", "memo_list_memos", "--args", `{"pageSize":1,"filter":"visibility != \"PRIVATE\""}`,
		"--progress", "--progress-tool", "memo_export_memos", "--progress-args", `{"steps":3}`, "--progress-concurrency", "3",
		"--elicitation", "--elicitation-tool", "memo_delete_memo", "--elicitation-args", `{"name":"memos/shopping-list"}`,
		"--cancel", "--cancel-tool", "memo_export_memos", "--cancel-args", `{"steps":100}`,
		"--after-cancel-tool", "memo_debug_stats", "--after-cancel-until", "cancelled",
	)
	checkModern(t, r)
	if d := step[discoverStep](t, r, "discover"); d.ServerInfo == nil || d.ServerInfo.Name != "memos-example-adapter" {
		t.Errorf("server/discover serverInfo %+v, want memos-example-adapter", d.ServerInfo)
	}
	if list := step[listStep](t, r, "listTools"); list.Count != 5 || !slices.Contains(list.Names, "memo_list_memos") {
		t.Errorf("tools/list: %d tools %q, want the 5 memos tools", list.Count, list.Names)
	}
	c := step[callStep](t, r, "call")
	if !strings.Contains(c.Text, `"name":"memos/example-public-memo"`) || strings.Contains(c.Text, "PRIVATE") {
		t.Errorf("memo_list_memos (pageSize 1, visibility != PRIVATE) returned %q, want only memos/example-public-memo", c.Text)
	}
	p := step[progressStep](t, r, "progress")
	if p.Wire != concurrent*steps || len(p.Calls) != concurrent {
		t.Errorf("memo_export_memos ×%d: %d progress notifications on the wire, %d results; want %d", concurrent, p.Wire, len(p.Calls), concurrent*steps)
	}
	for i, call := range p.Calls {
		if call.OnProgress != steps || call.Text != "exported 11 memos" {
			t.Errorf("memo_export_memos call %d: onprogress %d, result %q; want %d, %q", i, call.OnProgress, call.Text, steps, "exported 11 memos")
		}
	}
	eli := step[roundTripStep](t, r, "elicitation")
	if eli.HandlerCalls != 1 || eli.Text != "deleted memos/shopping-list" {
		t.Errorf("memo_delete_memo (input_required round trip): %d handler calls, result %q; want 1, %q", eli.HandlerCalls, eli.Text, "deleted memos/shopping-list")
	}
	cancel := step[cancelStep](t, r, "cancel")
	t.Logf("cancel: the v2 SDK sent %d notifications/cancelled; memo_debug_stats polled %d time(s)", cancel.CancelledSent, cancel.AfterAttempts)
	if st := afterStats(t, cancel); st.Cancelled != 1 {
		t.Errorf("memos counted %d cancelled requests within 5s of the client aborting one, want 1 (closing a 2026-07-28 response stream must reach the child as notifications/cancelled); stats %s",
			st.Cancelled, cancel.After.StructuredContent)
	}
}

// checkModern: the v2 client negotiated 2026-07-28 by server/discover, with
// no initialize and no session, sending MCP-Protocol-Version on each POST.
func checkModern(t *testing.T, r *driverResult) {
	t.Helper()
	s := &r.Summary
	if s.ProtocolVersion != "2026-07-28" || s.Era != "modern" {
		t.Errorf("negotiated %q (era %q), want 2026-07-28 (modern)", s.ProtocolVersion, s.Era)
	}
	step[stepBase](t, r, "expectVersion")
	conn := step[connectStep](t, r, "connect")
	if conn.Discover == nil || !slices.Contains(conn.Discover.SupportedVersions, "2026-07-28") {
		t.Errorf("connect-time server/discover did not offer 2026-07-28: %+v", conn.Discover)
	}
	if s.Wire.Sent["initialize"] != 0 || s.Wire.Sent["server/discover"] == 0 {
		t.Errorf("want server/discover and no initialize, sent %v", s.Wire.Sent)
	}
	if len(s.Wire.HTTP.SessionIDs) != 0 {
		t.Errorf("a 2026-07-28 exchange got Mcp-Session-Id %q", s.Wire.HTTP.SessionIDs)
	}
	if !slices.Contains(s.Wire.HTTP.ProtocolVersionHeaders, "2026-07-28") {
		t.Errorf("client sent MCP-Protocol-Version %q, want 2026-07-28", s.Wire.HTTP.ProtocolVersionHeaders)
	}
}

// A 2026-07-28 client (v2 SDK, pinned) in front of a legacy-only server
// (server-everything): the bridge detects the child's era and translates —
// it performs the initialize handshake itself, answers server/discover,
// adds resultType, and turns the child's server→client requests (sampling,
// elicitation) into input_required rounds, which the v2 SDK fulfils with
// its handlers (with a child per principal: a child shared by all is
// offered no client capability). The client must never see a JSON-RPC
// request.
func TestTSv2ModernClientToLegacyServerEverything(t *testing.T) {
	b := startBridge(t, serveOpts{Child: serverEverythingStdio(), Flags: []string{"--child-per", "principal"}})
	r := runDriver(t, "ts-v2-client.mjs", "--url", b.URL,
		"--expect-version", "2026-07-28",
		"--discover", "--list",
		"--call", "echo", "--args", `{"message":"modern to legacy"}`,
		"--progress", "--progress-tool", "trigger-long-running-operation", "--progress-args", `{"duration":0.5,"steps":3}`, "--progress-concurrency", "2",
		"--sampling",
		"--elicitation", "--elicitation-tool", "trigger-elicitation-request",
		// gzip-file-as-resource registers a session resource: server-everything
		// sends notifications/resources/list_changed, which the bridge must
		// serve on the listen stream that asked for resource list changes.
		"--listen", "--listen-filter", `{"resourcesListChanged":true}`,
		"--listen-trigger-tool", "gzip-file-as-resource",
		"--listen-trigger-args", `{"name":"interop.txt.gz","data":"data:text/plain;base64,aW50ZXJvcA=="}`,
		"--listen-expect", "notifications/resources/list_changed",
	)
	s := &r.Summary
	checkModern(t, r)
	if d := step[discoverStep](t, r, "discover"); d.ServerInfo == nil || d.ServerInfo.Name != "mcp-servers/everything" ||
		len(d.SupportedVersions) == 0 {
		t.Errorf("server/discover (answered by the bridge for a legacy child): %+v", d)
	}
	list := step[listStep](t, r, "listTools")
	for _, name := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request"} {
		if !slices.Contains(list.Names, name) {
			t.Errorf("tools/list lacks %q (got %q)", name, list.Names)
		}
	}
	if c := step[callStep](t, r, "call"); c.Text != "Echo: modern to legacy" {
		t.Errorf("echo returned %q", c.Text)
	}
	p := step[progressStep](t, r, "progress")
	if p.Wire != 6 || len(p.Calls) != 2 {
		t.Errorf("2 concurrent progress calls: %d notifications on the wire, %d results; want 6, 2", p.Wire, len(p.Calls))
	}
	for i, c := range p.Calls {
		if c.OnProgress != 3 {
			t.Errorf("progress call %d: onprogress %d, want 3", i, c.OnProgress)
		}
	}
	smp := step[roundTripStep](t, r, "sampling")
	if smp.HandlerCalls != 1 || !strings.Contains(smp.Text, samplingReply) {
		t.Errorf("sampling as an input_required round: %d handler calls, result %q", smp.HandlerCalls, smp.Text)
	}
	eli := step[roundTripStep](t, r, "elicitation")
	if eli.HandlerCalls != 1 || len(s.Handled.Elicitation) != 1 || s.Handled.Elicitation[0].Fields != 13 ||
		!strings.Contains(eli.Text, "Name: "+elicitName) {
		t.Errorf("elicitation as an input_required round: %d handler calls (%+v), result %q", eli.HandlerCalls, s.Handled.Elicitation, eli.Text)
	}
	for _, m := range []string{"sampling/createMessage", "elicitation/create", "roots/list"} {
		if n := s.Wire.Messages[m]; n != 0 {
			t.Errorf("a 2026-07-28 client received %d JSON-RPC %s requests; they must come as input_required results", n, m)
		}
	}
	checkListenHTTP(t, r, "resourcesListChanged", "notifications/resources/list_changed")

	// Resource subscriptions through listen: the bridge subscribes at the
	// child (resources/subscribe), and toggle-subscriber-updates makes
	// server-everything send notifications/resources/updated for it at once
	// (then every 5 s).
	const uri = "demo://resource/static/document/architecture.md"
	r2 := runDriver(t, "ts-v2-client.mjs", "--url", b.URL,
		"--expect-version", "2026-07-28",
		"--listen", "--listen-filter", `{"resourceSubscriptions":["`+uri+`"]}`,
		"--listen-trigger-tool", "toggle-subscriber-updates",
		"--listen-expect", "notifications/resources/updated",
	)
	checkListenHTTP(t, r2, "resourceSubscriptions", "notifications/resources/updated")
}

// checkListenHTTP: a subscriptions/listen stream was acknowledged with the
// requested kind, and what the trigger tool changed arrived on it.
func checkListenHTTP(t *testing.T, r *driverResult, kind, method string) {
	t.Helper()
	l := step[listenStep](t, r, "listen")
	if _, ok := l.HonoredFilter[kind]; !ok || l.Acknowledged != 1 {
		t.Errorf("subscriptions/listen: %d acknowledgements, honoredFilter %v; want 1 with %s", l.Acknowledged, l.HonoredFilter, kind)
	}
	if l.Received < 1 || l.Wire < 1 {
		t.Errorf("%s after %q: %d via the handler, %d on the wire; want >= 1", method, l.TriggerText, l.Received, l.Wire)
	}
	if len(r.Summary.Wire.HTTP.SessionIDs) != 0 {
		t.Errorf("a 2026-07-28 listen got Mcp-Session-Id %q", r.Summary.Wire.HTTP.SessionIDs)
	}
}

// A 2026-07-28 client that connects while the bridge is still starting its
// (legacy-only, translated) child must get a well-formed answer: either a
// JSON-RPC error (503 + Retry-After is fine) or a complete server/discover
// result. The v2 SDK otherwise fails its connect with "the server answered
// with an unusable reply". server/discover is sent every 20 ms from the
// moment the port accepts connections until /readyz is 200.
func TestModernDiscoverWhileChildStarts(t *testing.T) {
	b := startBridge(t, serveOpts{Child: serverEverythingStdio(), NoWait: true})
	t0 := time.Now()
	// The bridge holds a request until its child is up; on a loaded
	// machine that can take longer than a few seconds.
	client := &http.Client{Timeout: readyTimeout}
	const body = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"interop-startup-probe","version":"1"}}}}`
	statuses := map[string]int{}
	var bad []string
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(readyTimeout)
	for ready := false; !ready; {
		req, _ := http.NewRequest(http.MethodPost, b.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
		resp, err := client.Do(req)
		if err != nil {
			bad = append(bad, fmt.Sprintf("+%v: transport error %v", time.Since(t0).Round(time.Millisecond), err))
		} else {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			statuses[strconv.Itoa(resp.StatusCode)]++
			if why := badDiscover(resp.StatusCode, resp.Header.Get("Content-Type"), raw); why != "" {
				bad = append(bad, fmt.Sprintf("+%v: HTTP %d %s: %s — body %q", time.Since(t0).Round(time.Millisecond),
					resp.StatusCode, resp.Header.Get("Content-Type"), why, raw))
			}
		}
		if r, err := client.Get(b.base + "/readyz"); err == nil {
			ready = r.StatusCode == http.StatusOK
			r.Body.Close()
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("/readyz not 200 within %v", readyTimeout)
		}
	}
	t.Logf("server/discover during startup: HTTP statuses %v, ready after %v", statuses, time.Since(t0).Round(time.Millisecond))
	if len(bad) > 0 {
		if len(bad) > 5 {
			bad = append(bad[:5], fmt.Sprintf("... and %d more", len(bad)-5))
		}
		t.Errorf("BRIDGE BUG: %d server/discover answers during child startup were not well-formed JSON-RPC:\n  %s",
			len(bad), strings.Join(bad, "\n  "))
	}
}

// badDiscover says what is wrong with a server/discover answer, or "".
func badDiscover(status int, contentType string, raw []byte) string {
	if !strings.HasPrefix(contentType, "application/json") {
		return "not application/json"
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  *struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "invalid JSON: " + err.Error()
	}
	switch {
	case m.JSONRPC != "2.0" || string(m.ID) != "1":
		return "not a JSON-RPC response to id 1"
	case (m.Result == nil) == (m.Error == nil):
		return "needs exactly one of result and error"
	case m.Result != nil && (status != http.StatusOK || !slices.Contains(m.Result.SupportedVersions, "2026-07-28")):
		return "a result must be HTTP 200 and offer 2026-07-28"
	}
	return ""
}

// Nothing crosses between clients: four real clients at once, two 2026-07-28
// (v2 SDK) and two legacy sessions (v1 SDK), on one bridge whose legacy
// sessions also share one child (--session-mode shared). Every client makes
// three concurrent progress calls; the SDKs pick the same request ids and
// progress tokens (0, 1, 2 …) in every process, so the bridge must remap
// them. Each client's calls use a different step count, so a notification
// delivered to the wrong client or call changes a count.
func TestConcurrentClientsKeptApart(t *testing.T) {
	b := startBridge(t, serveOpts{Flags: []string{"--session-mode", "shared"}, Child: []string{env.memos}})
	clients := []struct {
		script string
		steps  int
		extra  []string
	}{
		{"ts-v2-client.mjs", 2, []string{"--expect-version", "2026-07-28"}},
		{"ts-v2-client.mjs", 3, []string{"--expect-version", "2026-07-28"}},
		{"ts-v1-client.mjs", 4, nil},
		{"ts-v1-client.mjs", 5, nil},
	}
	const concurrent = 3
	type outcome struct {
		r    *driverResult
		err  error
		args []string
	}
	results := make([]outcome, len(clients))
	art := artifactDir(t)
	var wg sync.WaitGroup
	for i, c := range clients {
		args := append([]string{"--url", b.URL, "--progress", "--progress-tool", "memo_export_memos",
			"--progress-args", fmt.Sprintf(`{"steps":%d}`, c.steps), "--progress-concurrency", strconv.Itoa(concurrent)}, c.extra...)
		results[i].args = args
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("%s-%d", strings.TrimSuffix(c.script, ".mjs"), i)
			results[i].r, results[i].err = execDriver(art, name, c.script, args...)
		}()
	}
	wg.Wait()
	for i, c := range clients {
		res := results[i]
		checkDriver(t, c.script, res.args, res.r, res.err)
		p := step[progressStep](t, res.r, "progress")
		if p.Wire != concurrent*c.steps || len(p.Calls) != concurrent {
			t.Errorf("client %d (%s, %d steps): %d progress notifications on its wire, %d results; want %d",
				i, c.script, c.steps, p.Wire, len(p.Calls), concurrent*c.steps)
		}
		for j, call := range p.Calls {
			if call.OnProgress != c.steps || len(call.Events) == 0 || call.Events[len(call.Events)-1].Progress != float64(c.steps) {
				t.Errorf("client %d (%s) call %d: onprogress %d, events %+v; want %d events ending at %d",
					i, c.script, j, call.OnProgress, call.Events, c.steps, c.steps)
			}
		}
	}
}
