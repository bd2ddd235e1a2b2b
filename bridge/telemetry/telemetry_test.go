package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

func scrape(t *testing.T, tel *Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestToolLabelCap: tool names come from clients; past MaxTools distinct
// names, every further one is counted as _other, and so are names that
// are too long or not UTF-8.
func TestToolLabelCap(t *testing.T) {
	tel, err := New(context.Background(), Options{Side: Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	s := tel.Scope("srv")
	call := func(tool string) {
		s.Begin(&Request{Method: "tools/call", Name: tool}).End()
	}
	for i := range MaxTools + 50 {
		call(fmt.Sprintf("tool-%d", i))
		if i >= MaxTools {
			// Again, once the series exist: observe's one-lookup way
			// must find the same series as the caps do.
			call(fmt.Sprintf("tool-%d", i))
		}
	}
	call(strings.Repeat("x", maxLabelLen+1))
	call("bad\xff")
	call(Other)    // a client may name a tool like the overflow series
	call("tool-0") // admitted before the cap: still itself
	for i := range 100 {
		s.Begin(&Request{Method: fmt.Sprintf("custom/%d", i)}).End()
	}
	text := scrape(t, tel)
	tools, methods := map[string]bool{}, map[string]bool{}
	var other float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "mcp_server_operation_duration_seconds_count{") {
			continue
		}
		if i := strings.Index(line, `gen_ai_tool_name="`); i >= 0 {
			v := line[i+len(`gen_ai_tool_name="`):]
			tools[v[:strings.IndexByte(v, '"')]] = true
		}
		if i := strings.Index(line, `mcp_method_name="`); i >= 0 {
			v := line[i+len(`mcp_method_name="`):]
			methods[v[:strings.IndexByte(v, '"')]] = true
		}
		if strings.Contains(line, `gen_ai_tool_name="_other"`) {
			fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &other)
		}
	}
	delete(tools, "")
	if len(tools) != MaxTools+1 || !tools[Other] || !tools["tool-0"] {
		t.Errorf("%d distinct tool labels (want %d + _other)", len(tools), MaxTools)
	}
	if other != 103 {
		t.Errorf("_other counted %v calls, want 103 (50 past the cap twice, one too long, one not UTF-8, one named _other)", other)
	}
	if got, _ := sampleValue(text, `gen_ai_tool_name="tool-0"`); got != 2 {
		t.Errorf("tool-0 counted %v calls, want 2", got)
	}
	if len(methods) > MaxMethods+2 || !methods[Other] {
		t.Errorf("%d distinct method labels, want at most %d + tools/call + _other", len(methods), MaxMethods)
	}
}

// TestNilTelemetryDoesNothing: the off switch is nil, and nil is safe.
func TestNilTelemetryDoesNothing(t *testing.T) {
	tel, err := New(context.Background(), Options{Side: Server})
	if tel != nil || err != nil {
		t.Fatalf("New without metrics or tracing = %v, %v", tel, err)
	}
	s := tel.Scope("x")
	op := s.Begin(&Request{Method: "tools/call"})
	op.Result(&wire.Message{})
	op.Fail("500", "")
	op.End()
	s.Restarted()
	s.Rejected(503)
	s.Watch(func() Gauges { return Gauges{} })()
	if p, st := op.Propagate(); p != "" || st != "" {
		t.Error("a nil Op propagates something")
	}
	if n := testing.AllocsPerRun(100, func() {
		o := s.Begin(&Request{Method: "tools/call", Name: "t"})
		o.End()
	}); n != 0 {
		t.Errorf("a nil Scope allocates %v per request", n)
	}
}

// TestLabelChildrenDoNotAllocate: with metrics on and no tracing, a request
// whose label set was seen before costs the Op and nothing more.
func TestLabelChildrenDoNotAllocate(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	s := tel.Scope("")
	req := &Request{Method: "tools/call", Name: "echo", Version: "2026-07-28"}
	s.Begin(req).End()
	if n := testing.AllocsPerRun(200, func() { s.Begin(req).End() }); n > 1 {
		t.Errorf("%v allocations per observed request, want at most 1 (the Op)", n)
	}
}

func TestErrorType(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Client, Metrics: true})
	s := tel.Scope("")
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
	} {
		var m wire.Message
		if err := wire.Parse([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		o := s.Begin(&Request{Method: "tools/call", Name: "t"})
		o.Result(&m)
		o.Fail("503", "later causes do not override the response's")
		o.End()
	}
	text := scrape(t, tel)
	for _, want := range []string{`error_type="-32602"`, `error_type="tool_error"`, `error_type="503"`} {
		if !strings.Contains(text, want) {
			t.Errorf("no series with %s", want)
		}
	}
	if !strings.Contains(text, "mcp_client_operation_duration_seconds_bucket{") || !strings.Contains(text, `le="300"`) {
		t.Error("no client histogram with the semconv buckets")
	}
}

func TestTracingFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		// (#28 item 7) case-insensitive, and a list: otlp among them is on.
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "OTLP"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "otlp,console"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": " console , Otlp "}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "console"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "None"}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false},
	} {
		if got := TracingFromEnv(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.env, got, tc.want)
		}
	}
}

// Members of OTEL_TRACES_EXPORTER without an exporter in the bridge are
// warned about, by name; otlp and none are not.
func TestTracingFromEnvWarnsIgnoredExporters(t *testing.T) {
	for _, tc := range []struct{ v, warn string }{
		{"otlp,console", `"ignored":["console"],"otlp":true`},
		{"zipkin", `"ignored":["zipkin"],"otlp":false`},
		{"OTLP", ""},
		{"none", ""},
	} {
		var buf bytes.Buffer
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": tc.v}
		TracingFromEnvLog(func(k string) string { return env[k] }, zerolog.New(&buf))
		if got := buf.String(); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
			t.Errorf("OTEL_TRACES_EXPORTER=%q logged %q, want %q", tc.v, got, tc.warn)
		}
	}
}

// TestWithTraceContext: the fields are replaced where present, added where
// not (creating _meta and params), and never duplicated.
func TestWithTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"_meta":{"traceparent":"` + tp + `"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, `{"name":"a","_meta":{"traceparent":"` + tp + `"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"x":1}}}`, `{"_meta":{"traceparent":"` + tp + `","x":1}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"old","tracestate":"a=1"}}}`, `{"_meta":{"traceparent":"` + tp + `","tracestate":"a=1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"Traceparent":"old"}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"a","traceparent":"b"}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"TRACEPARENT":"old"}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"\u0074raceparent":"old"}}}`, ``},
	} {
		var m wire.Message
		if err := wire.Parse([]byte(tc.in), &m); err != nil {
			t.Fatal(err)
		}
		out := WithTraceContext(&m, tp, "")
		if tc.want == "" {
			if out != nil {
				t.Errorf("%s: edited to %s, want left alone", tc.in, out)
			}
			continue
		}
		var got, want struct{ Params any }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s -> %s: %v", tc.in, out, err)
		}
		json.Unmarshal([]byte(`{"params":`+tc.want+`}`), &want)
		if g, w := fmt.Sprint(got.Params), fmt.Sprint(want.Params); g != w {
			t.Errorf("%s -> %s, want params %s", tc.in, out, tc.want)
		}
	}
}

// FuzzWithTraceContext: whatever the message, the edit yields one valid
// message whose _meta carries the traceparent exactly once, or no edit.
func FuzzWithTraceContext(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"x"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","params":{ "_meta" : { } }}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","_meta":{"progressToken":7,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=1,congo=2","io.modelcontextprotocol/logLevel":"info"},"arguments":{"a":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"tracestate":{"a":[1]},"traceparent":7},"name":"n"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"TRACEPARENT":"x","t\u0072acestate":"y","io.modelcontextprotocol/clientInfo":{"name":"n"}}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"n","version":"1"}}}}`))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m wire.Message
		if wire.Parse(raw, &m) != nil || m.Kind != wire.KindRequest || !json.Valid(raw) {
			return
		}
		out := WithTraceContext(&m, tp, "s=1")
		// ReadMeta's absent (which lets Relay skip the look at each key)
		// holds only when a decoder finds neither key, and the edit it
		// allows is the one that looks.
		meta := ReadMeta(&m)
		if meta.absent {
			var env struct {
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(raw, &env) == nil {
				for k := range env.Params.Meta {
					if strings.EqualFold(k, "traceparent") || strings.EqualFold(k, "tracestate") {
						t.Fatalf("%s: ReadMeta says absent, a decoder reads %q", raw, k)
					}
				}
			}
		}
		if c := m; out != nil || meta.absent {
			if withTrace(&c, tp, "s=1", &meta); !bytes.Equal(c.Raw, out) {
				t.Fatalf("%s -> Relay's edit %s, WithTraceContext %s", raw, c.Raw, out)
			}
		}
		// serve's way (RelayEdits spliced into the child's copy) makes
		// the message Relay makes.
		ref := m
		want := passOn(&m, tp, "s=1").Relay(&ref, meta).Raw
		if got := relayedBy(passOn(&m, tp, "s=1"), m); !bytes.Equal(got, want) {
			t.Fatalf("%s -> RelayEdits %s, Relay %s", raw, got, want)
		}
		if out == nil {
			return
		}
		var om wire.Message
		if err := wire.Parse(out, &om); err != nil || !json.Valid(out) {
			t.Fatalf("%s -> invalid %s (%v)", raw, out, err)
		}
		if p, st := MetaContext(&om); p != tp || st != "s=1" {
			t.Fatalf("%s -> %s: _meta has %q %q", raw, out, p, st)
		}
		// WithTrace, which moves the spans of m instead of reading the
		// edited message again where it can, makes the same message and
		// reads it as Parse does.
		c := m
		if got := WithTrace(&c, tp, "s=1"); got != &c || !bytes.Equal(c.Raw, out) {
			t.Fatalf("%s -> WithTrace %s, WithTraceContext %s", raw, c.Raw, out)
		}
		cw, ow := c, om
		cw.Raw, ow.Raw = nil, nil
		if !reflect.DeepEqual(cw, ow) {
			t.Fatalf("%s -> %s: WithTrace reads it as\n%+v\nParse as\n%+v", raw, out, cw, ow)
		}
		// A Go decoder matches keys by case folding: each key must be
		// there once in every spelling it would take for it.
		var env struct {
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(out, &env) == nil {
			for _, key := range []string{"traceparent", "tracestate"} {
				n := 0
				for k := range env.Params.Meta {
					if strings.EqualFold(k, key) {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("%s -> %s: %d keys a decoder reads as %s", raw, out, n, key)
				}
			}
		}
	})
}

// containsFold against the plain scan it replaces.
func FuzzContainsFold(f *testing.F) {
	f.Add([]byte(`{"x":"RaCeParent","y":"rrace"}`), "raceparent")
	f.Add([]byte(`RRRRrrrrRRRRracestatE`), "racestate")
	f.Fuzz(func(t *testing.T, b []byte, s string) {
		if s == "" || len(s) > 16 {
			return
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 'a' || s[i] > 'z' {
				return
			}
		}
		naive := false
		for i := 0; i+len(s) <= len(b); i++ {
			if bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
				naive = true
				break
			}
		}
		if got := containsFold(b, s); got != naive {
			t.Fatalf("containsFold(%q, %q) = %v, the plain scan says %v", b, s, got, naive)
		}
	})
}

// TestBothSidesOneRegistry: a gateway serves some servers and is the
// client of others; one Telemetry exports both histograms and makes spans
// of the scope's kind.
func TestBothSidesOneRegistry(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	tel.ScopeFor(Server, "local").Begin(&Request{Method: "tools/list"}).End()
	tel.ScopeFor(Client, "remote").Begin(&Request{Method: "tools/list"}).End()
	text := scrape(t, tel)
	for _, want := range []string{
		`mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="tools/list",mcp_protocol_version="",server="local"} 1`,
		`mcp_client_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="tools/list",mcp_protocol_version="",server="remote"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if tel.Scope("local") != tel.ScopeFor(Server, "local") {
		t.Error("Scope is not ScopeFor the Telemetry's own side")
	}
}

// tracestate is refused, not added, next to a key a Go decoder folds to it
// ("traceſtate": 'ſ' folds to 's').
func TestWithTraceContextUnicodeFold(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var m wire.Message
	if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceſtate":"x=1"}}}`), &m); err != nil {
		t.Fatal(err)
	}
	if out := WithTraceContext(&m, tp, "s=1"); out != nil {
		t.Errorf("edited to %s: a Go decoder would read two tracestate keys", out)
	}
}

// sampleValue returns the value of the first duration _count sample whose
// labels contain match.
func sampleValue(text, match string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "mcp_server_operation_duration_seconds_count{") && strings.Contains(line, match) {
			var v float64
			fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v)
			return v, true
		}
	}
	return 0, false
}
