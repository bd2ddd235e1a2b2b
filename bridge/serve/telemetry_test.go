package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

func newTelemetry(t *testing.T, metrics, tracing bool) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Side: telemetry.Server, Metrics: metrics, Tracing: tracing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel
}

// scrape returns the /metrics text of tel.
func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// sample sums the samples of metric whose labels include every one of
// labels (`name="value"` strings).
func sample(text, metric string, labels ...string) (float64, bool) {
	var sum float64
	found := false
lines:
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestMetricsCountToolCalls: after N tools/call of one tool through serve
// (Go SDK client, 2026-07-28 and a 2025 session), /metrics counts N for
// that tool, with the semconv labels, and the bridge's own gauges.
func TestMetricsCountToolCalls(t *testing.T) {
	for _, v := range []struct{ name, version, want string }{{"modern", "", "2026-07-28"}, {"2025-11-25", "2025-11-25", "2025-11-25"}} {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tel := newTelemetry(t, true, false)
			b := startBridge(t, Config{Telemetry: tel, ServerName: "everything"}, bins["everything"])
			cs := connectSDK(t, ctx, b.URL, v.version, nil)
			const n = 7
			for range n {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
					t.Fatal(err)
				}
			}
			gauges := scrape(t, tel)
			for _, m := range []string{"mcp_bridge_children", "mcp_bridge_legacy_sessions", "mcp_bridge_buffered_bytes", "mcp_bridge_open_streams", "mcp_bridge_child_restarts_total", "mcp_bridge_input_rounds_total", "mcp_bridge_inflight_requests"} {
				if !strings.Contains(gauges, "\n"+m+"{") {
					t.Errorf("/metrics lacks %s", m)
				}
			}
			// A 2025 session's responses are SSE streams, flushed before
			// the handler records them: close the session so that every
			// request is over before reading.
			cs.Close()
			b.BeginShutdown()
			b.srv.CloseClientConnections()
			b.Close()
			text := scrape(t, tel)
			got, ok := sample(text, "mcp_server_operation_duration_seconds_count",
				`mcp_method_name="tools/call"`, `gen_ai_tool_name="test_simple_text"`, `server="everything"`, `error_type=""`)
			if !ok || got != n {
				t.Errorf("tools/call count = %v (found %v), want %d\n%s", got, ok, n, testmain.Lines(text, "mcp_server_operation"))
			}
			if _, ok := sample(text, "mcp_server_operation_duration_seconds_count", `mcp_protocol_version="`+v.want+`"`); !ok {
				t.Errorf("no operation labelled mcp_protocol_version=%q\n%s", v.want, testmain.Lines(text, "mcp_server_operation"))
			}
		})
	}
}

// TestMetricsRejectedAndGauges: a refused request is counted by its status;
// the gauges read the Handler's state (one child running).
func TestMetricsRejectedAndGauges(t *testing.T) {
	tel := newTelemetry(t, true, false)
	b := startBridge(t, Config{Telemetry: tel, AuthToken: "tok-metrics"}, bins["everything"])
	resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	text := scrape(t, tel)
	if got, _ := sample(text, "mcp_bridge_rejected_requests_total", `reason="401"`); got != 1 {
		t.Errorf("rejected{reason=401} = %v, want 1\n%s", got, testmain.Lines(text, "rejected"))
	}
	if got, _ := sample(text, "mcp_bridge_children"); got < 1 {
		t.Errorf("mcp_bridge_children = %v, want >= 1", got)
	}
	if strings.Contains(text, "tok-metrics") {
		t.Error("/metrics shows the token")
	}
}

const (
	traceMeta   = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceHeader = "0af7651916cd43dd8448eb211c80319c"
	parentSpan  = "00f067aa0ba902b7"
)

// TestTracesOneSpanPerRequest: an OTLP receiver gets one SERVER span per
// request with the semconv attributes, in the trace of the client's
// traceparent — from params._meta and from the HTTP header — and the child
// receives a traceparent in _meta naming that span as its parent.
func TestTracesOneSpanPerRequest(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	tel := newTelemetry(t, false, true)
	stdin := filepath.Join(t.TempDir(), "stdin.log")
	b := startBridge(t, Config{Telemetry: tel}, teeCommand(stdin, bins["everything"])...)

	withMeta := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"traceparent":"00-`+traceMeta+`-`+parentSpan+`-01","tracestate":"rojo=1",`, 1)
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"m-1","method":"tools/call","params":{"name":"test_simple_text","arguments":{},`+withMeta+`}}`,
		modernHeaders("tools/call", "test_simple_text"))
	if resp.StatusCode != 200 {
		t.Fatalf("_meta request: %d %s", resp.StatusCode, body)
	}
	hdr := modernHeaders("tools/call", "test_simple_text")
	hdr["traceparent"] = "00-" + traceHeader + "-" + parentSpan + "-01"
	resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},`+modernMeta+`}}`, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("header request: %d %s", resp.StatusCode, body)
	}
	if err := tel.Shutdown(context.Background()); err != nil { // flushes the spans
		t.Fatal(err)
	}
	byTrace := map[string][]*tracepb.Span{}
	for _, s := range rcv.Spans() {
		byTrace[otlptest.TraceID(s)] = append(byTrace[otlptest.TraceID(s)], s)
	}
	child, _ := os.ReadFile(stdin)
	for _, tc := range []struct{ trace, id string }{{traceMeta, "m-1"}, {traceHeader, "2"}} {
		spans := byTrace[tc.trace]
		if len(spans) != 1 {
			t.Fatalf("trace %s: %d spans, want 1 (all: %d)", tc.trace, len(spans), len(rcv.Spans()))
		}
		s := spans[0]
		if s.Kind != tracepb.Span_SPAN_KIND_SERVER || s.Name != "tools/call test_simple_text" || otlptest.ParentID(s) != parentSpan {
			t.Errorf("span %q kind %v parent %s", s.Name, s.Kind, otlptest.ParentID(s))
		}
		for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "test_simple_text",
			"jsonrpc.request.id": tc.id, "mcp.protocol.version": "2026-07-28", "network.transport": "tcp", "gen_ai.operation.name": "execute_tool"} {
			if got := otlptest.Attr(s, k); got != want {
				t.Errorf("trace %s: %s = %q, want %q", tc.trace, k, got, want)
			}
		}
		want := `"traceparent":"00-` + tc.trace + `-` + otlptest.SpanID(s) + `-01"`
		if !childGot(child, want) {
			t.Errorf("the child did not receive %s in _meta:\n%s", want, child)
		}
	}
	if !childGot(child, `"tracestate":"rojo=1"`) {
		t.Error("the child did not receive the client's tracestate")
	}
}

// childGot reports whether a line the child read carries want inside
// params._meta.
func childGot(log []byte, want string) bool {
	sc := bufio.NewScanner(strings.NewReader(string(log)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Params struct {
				Meta json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && strings.Contains(string(m.Params.Meta), want) {
			return true
		}
	}
	return false
}

// TestTraceparentHeaderReachesChildWithoutTracing: with tracing off, a
// traceparent header is still passed on to the child in _meta (and a
// request without one is relayed byte for byte).
func TestTraceparentHeaderReachesChildWithoutTracing(t *testing.T) {
	stdin := filepath.Join(t.TempDir(), "stdin.log")
	b := startBridge(t, Config{}, teeCommand(stdin, bins["everything"])...)
	hdr := modernHeaders("tools/call", "test_simple_text")
	tp := "00-" + traceHeader + "-" + parentSpan + "-01"
	hdr["traceparent"] = tp
	if resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},`+modernMeta+`}}`, hdr); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	child, _ := os.ReadFile(stdin)
	if !childGot(child, `"traceparent":"`+tp+`"`) {
		t.Errorf("the child did not receive the header's traceparent:\n%s", child)
	}
}

// TestAccessLog: one info line per HTTP request with the HTTP and MCP
// methods, tool, status, took_ms, principal and bytes — never the token or
// the body.
func TestAccessLog(t *testing.T) {
	const token = "tok-access-log-secret"
	b := startBridge(t, Config{AccessLog: true, AuthToken: token}, bins["everything"])
	hdr := modernHeaders("tools/call", "test_simple_text")
	hdr["Authorization"] = "Bearer " + token
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"test_simple_text","arguments":{"secretArg":"body-secret"},` + modernMeta + `}}`
	resp, out := rawPost(t, b.URL, body, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	rawPost(t, b.URL, `{"jsonrpc":"2.0","id":10,"method":"ping"}`, nil) // no token: 401
	var lines []map[string]any
	for _, l := range strings.Split(b.log.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["message"] == "request" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d access log lines, want 2:\n%s", len(lines), b.log.String())
	}
	e := lines[0]
	for k, want := range map[string]any{"level": "info", "http_method": "POST", "mcp_method": "tools/call", "tool": "test_simple_text",
		"status": float64(200), "bytes_in": float64(len(body)), "bytes_out": float64(len(out))} {
		if e[k] != want {
			t.Errorf("%s = %v, want %v", k, e[k], want)
		}
	}
	if _, ok := e["took_ms"].(float64); !ok {
		t.Errorf("took_ms missing: %v", e)
	}
	if p, _ := e["principal"].(string); !strings.HasPrefix(p, "token:") {
		t.Errorf("principal = %q, want the token's short id", p)
	}
	if lines[1]["status"] != float64(401) || lines[1]["principal"] != "anonymous" {
		t.Errorf("refused request logged as %v", lines[1])
	}
	if strings.Contains(b.log.String(), token) || strings.Contains(b.log.String(), "body-secret") {
		t.Error("the log shows the token or the body")
	}
}

// TestAccessLogFollowsLevel: with the logger at warn (--log-level warn)
// the access log's info line would be dropped, so a request is not
// watched for it at all — no wrapped ResponseWriter, no principal slot —
// while at info it is.
func TestAccessLogFollowsLevel(t *testing.T) {
	for _, tc := range []struct {
		level zerolog.Level
		want  bool
	}{{zerolog.InfoLevel, true}, {zerolog.DebugLevel, true}, {zerolog.WarnLevel, false}, {zerolog.Disabled, false}} {
		h, err := New(Config{Command: testChild(), AccessLog: true, Logger: zerolog.New(io.Discard).Level(tc.level)})
		if err != nil {
			t.Fatal(err)
		}
		if h.obs.AccessLog != tc.want {
			t.Errorf("logger at %v: access log on = %v, want %v", tc.level, h.obs.AccessLog, tc.want)
		}
	}
}

// TestRequestsByTokenName: mcp_bridge_requests_total counts the HTTP
// requests of each static token under the token's name from the token
// file (issue 12: a token's name "appears in logs and metrics"), refused
// ones as anonymous; no token is ever in /metrics.
func TestRequestsByTokenName(t *testing.T) {
	const ta, tb = "tok-alice-metrics-s3cret", "tok-bob-metrics-s3cret"
	tel := newTelemetry(t, true, false)
	b := startBridge(t, Config{Command: testChild(), Telemetry: tel, ServerName: "team",
		NamedTokens: []auth.NamedToken{{Name: "alice", Token: ta}, {Name: "bob", Token: tb}}})
	const n, m = 3, 5
	for range n {
		modernCall(t, b.URL, ta, "env")
	}
	for range m {
		modernCall(t, b.URL, tb, "env")
	}
	rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": "Bearer tok-wrong-s3cret"})
	// The counter is bumped after the response is written: wait for every
	// request to be over (Close returns once they are).
	b.BeginShutdown()
	b.srv.CloseClientConnections()
	b.Close()
	text := scrape(t, tel)
	for who, want := range map[string]float64{"alice": n, "bob": m, "anonymous": 1} {
		if got, _ := sample(text, "mcp_bridge_requests_total", `principal="`+who+`"`, `server="team"`); got != want {
			t.Errorf("requests_total{principal=%q} = %v, want %v\n%s", who, got, want, testmain.Lines(text, "requests_total"))
		}
	}
	for _, tok := range []string{ta, tb, "tok-wrong-s3cret", "s3cret"} {
		if strings.Contains(text, tok) {
			t.Errorf("/metrics shows a token (%q)", tok)
		}
	}
}

// A 2025-03-26 batch POST is one HTTP request carrying several JSON-RPC
// requests: each gets its own span (in the trace the request's traceparent
// header names, passed on in its own _meta) and its own duration sample,
// as it would sent alone; the notification in the batch gets neither.
func TestBatchSpansPerRequest(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	tel := newTelemetry(t, true, true)
	stdin := filepath.Join(t.TempDir(), "stdin.log")
	b := startBridge(t, Config{Telemetry: tel}, teeCommand(stdin, bins["memos"])...)
	sid := legacyInit(t, b.URL, "", "2025-03-26")
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"p","method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`
	resp, body := rawPost(t, b.URL, batch, map[string]string{"Mcp-Session-Id": sid, "traceparent": "00-" + traceHeader + "-" + parentSpan + "-01"})
	if resp.StatusCode != 200 {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}
	if msgs := messages(t, resp, body); len(msgs) != 2 {
		t.Fatalf("batch answers %v, want two responses", msgs)
	}
	b.BeginShutdown()
	b.srv.CloseClientConnections()
	b.Close()
	text := scrape(t, tel)
	if err := tel.Shutdown(context.Background()); err != nil { // flushes the spans
		t.Fatal(err)
	}
	spans := map[string]*tracepb.Span{}
	for _, s := range rcv.Spans() {
		if otlptest.TraceID(s) == traceHeader {
			spans[otlptest.Attr(s, "mcp.method.name")] = s
		}
	}
	child, _ := os.ReadFile(stdin)
	for method, id := range map[string]string{"tools/list": "1", "ping": "p"} {
		s := spans[method]
		if s == nil {
			t.Errorf("no %s span in the header's trace (all: %d spans)", method, len(rcv.Spans()))
			continue
		}
		if got := otlptest.Attr(s, "jsonrpc.request.id"); got != id || otlptest.ParentID(s) != parentSpan || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("%s span: id %q parent %s kind %v", method, got, otlptest.ParentID(s), s.Kind)
		}
		if want := `"traceparent":"00-` + traceHeader + `-` + otlptest.SpanID(s) + `-01"`; !childGot(child, want) {
			t.Errorf("the child did not receive %s's span in its _meta:\n%s", method, child)
		}
		if got, _ := sample(text, "mcp_server_operation_duration_seconds_count", `mcp_method_name="`+method+`"`); got != 1 {
			t.Errorf("%s count = %v, want 1\n%s", method, got, testmain.Lines(text, "mcp_server_operation"))
		}
	}
	if len(spans) != 2 {
		t.Errorf("%d spans in the header's trace, want 2 (one per request of the batch)", len(spans))
	}
}

// TestTraceReachesChildOnEveryPath: whichever way a request reaches the
// child — a 2026-07-28 request to a child that speaks it (the context
// spliced in with the child's id), a 2025 session translated for such a
// child, a 2025 session with a 2025 child — the child reads exactly one
// traceparent in its _meta, naming the request's span.
func TestTraceReachesChildOnEveryPath(t *testing.T) {
	for _, tc := range []struct{ name, child, era string }{
		{"modern client, modern child", "memos", "2026-07-28"},
		{"2025 session, modern child", "memos", "2025-11-25"},
		{"2025 session, 2025 child", "everything", "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
			tel := newTelemetry(t, false, true)
			stdin := filepath.Join(t.TempDir(), "stdin.log")
			b := startBridge(t, Config{Telemetry: tel}, teeCommand(stdin, bins[tc.child])...)
			var hdr map[string]string
			req := `{"jsonrpc":"2.0","id":"t-1","method":"tools/list"}`
			if tc.era == "2026-07-28" {
				hdr = modernHeaders("tools/list", "")
				req = `{"jsonrpc":"2.0","id":"t-1","method":"tools/list","params":{` + modernMeta + `}}`
			} else {
				hdr = map[string]string{"Mcp-Session-Id": legacyInit(t, b.URL, "", tc.era), "MCP-Protocol-Version": tc.era}
			}
			hdr["traceparent"] = "00-" + traceHeader + "-" + parentSpan + "-01"
			if resp, body := rawPost(t, b.URL, req, hdr); resp.StatusCode != 200 {
				t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
			}
			if err := tel.Shutdown(context.Background()); err != nil { // flushes the spans
				t.Fatal(err)
			}
			var span *tracepb.Span
			for _, s := range rcv.Spans() {
				if otlptest.TraceID(s) == traceHeader && otlptest.Attr(s, "mcp.method.name") == "tools/list" {
					span = s
				}
			}
			if span == nil {
				t.Fatalf("no tools/list span in the header's trace (%d spans)", len(rcv.Spans()))
			}
			child, _ := os.ReadFile(stdin)
			want := `"traceparent":"00-` + traceHeader + `-` + otlptest.SpanID(span) + `-01"`
			if !childGot(child, want) {
				t.Fatalf("the child did not receive %s in _meta:\n%s", want, child)
			}
			for _, line := range strings.Split(string(child), "\n") {
				if strings.Contains(line, traceHeader) && strings.Count(strings.ToLower(line), `"traceparent"`) != 1 {
					t.Errorf("the child's tools/list carries %d traceparent keys: %s", strings.Count(strings.ToLower(line), `"traceparent"`), line)
				}
			}
		})
	}
}
