package telemetry

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

const (
	tpTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tpSpan  = "00f067aa0ba902b7"
)

// TestTraceparent: the W3C rules, case by case.
func TestTraceparent(t *testing.T) {
	ok := "00-" + tpTrace + "-" + tpSpan + "-01"
	for _, tc := range []struct {
		in      string
		valid   bool
		sampled bool
	}{
		{ok, true, true},
		{"00-" + tpTrace + "-" + tpSpan + "-00", true, false},
		{"00-" + tpTrace + "-" + tpSpan + "-03", true, true},                    // level 2's random bit
		{"00-" + tpTrace + "-" + tpSpan + "-09", false, false},                  // version 00: reserved bits
		{"ff-" + tpTrace + "-" + tpSpan + "-01", false, false},                  // version ff is invalid
		{"00-" + strings.ToUpper(tpTrace) + "-" + tpSpan + "-01", false, false}, // HEXDIGLC
		{"00-" + strings.Repeat("0", 32) + "-" + tpSpan + "-01", false, false},
		{"00-" + tpTrace + "-" + strings.Repeat("0", 16) + "-01", false, false},
		{ok + "-", false, false},    // version 00 is exactly 55 characters
		{ok[:54], false, false},     // short
		{"01" + ok[2:], true, true}, // a later version ...
		{"01" + ok[2:] + "-what-ever", true, true},
		{"01" + ok[2:] + "x", false, false}, // ... whose flags end at a dash
		{"0g" + ok[2:], false, false},
		{"00_" + ok[3:], false, false},
		{"", false, false},
	} {
		c, valid := parseTraceparent(tc.in, "")
		if valid != tc.valid || valid && c.sampled() != tc.sampled {
			t.Errorf("%q: valid %v sampled %v, want %v %v", tc.in, valid, c.sampled(), tc.valid, tc.sampled)
		}
		if valid && tc.in[:2] == "00" && c.traceparent() != tc.in {
			t.Errorf("%q formats back as %q", tc.in, c.traceparent())
		}
	}
}

// TestTracestate: passed on when well formed, dropped when it is not or
// when it is over 32 members or 512 characters — the traceparent stands.
func TestTracestate(t *testing.T) {
	tp := "00-" + tpTrace + "-" + tpSpan + "-01"
	many := func(n int) string {
		var m []string
		for i := range n {
			m = append(m, "k"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))+"=v")
		}
		return strings.Join(m, ",")
	}
	for _, tc := range []struct {
		in   string
		keep bool
	}{
		{"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true},
		{"rojo=1, congo=2 ,,", true},
		{"tenant@sys=1", true},
		{many(32), true},
		{many(33), false},
		{"a=" + strings.Repeat("v", 256) + ",b=" + strings.Repeat("v", 256), false}, // 516 characters
		{"a=1,a=2", false}, // duplicate key
		{"A=1", false},
		{"a=1=2", false},
		{"a", false},
		{"a=\x01", false},
		{"a=b ", true}, // trailing blanks are optional whitespace
	} {
		c, ok := parseTraceparent(tp, tc.in)
		if !ok {
			t.Fatal("traceparent refused")
		}
		if (c.state != "") != tc.keep {
			t.Errorf("tracestate %q: kept %v, want %v", tc.in, c.state != "", tc.keep)
		}
	}
}

type mapCarrier map[string]string

func (m mapCarrier) Get(k string) string { return m[k] }
func (m mapCarrier) Set(k, v string)     { m[k] = v }
func (m mapCarrier) Keys() []string      { return nil }
func otelExtract(parent, state string) trace.SpanContext {
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		mapCarrier{"traceparent": parent, "tracestate": state}))
}

// FuzzTraceContext is a differential test against the OpenTelemetry Go
// SDK's W3C propagator (a test-only import): both accept the same
// traceparents with the same ids and flags, and the same tracestates up
// to 512 characters (beyond, the bridge drops what the SDK keeps); what
// the bridge formats, the SDK reads back.
func FuzzTraceContext(f *testing.F) {
	tp := "00-" + tpTrace + "-" + tpSpan + "-01"
	f.Add(tp, "rojo=1,congo=2")
	f.Add("01"+tp[2:]+"-x", "a@b=1")
	f.Add("00-"+tpTrace+"-"+tpSpan+"-03", " a=1 ,, b=2\t")
	f.Add("cc-"+tpTrace+"-"+tpSpan+"-ff-", "a=1,a=2")
	f.Fuzz(func(t *testing.T, parent, state string) {
		mine, ok := parseTraceparent(parent, state)
		sdk := otelExtract(parent, state)
		if ok != sdk.IsValid() {
			t.Fatalf("%q: bridge valid %v, SDK %v", parent, ok, sdk.IsValid())
		}
		if !ok {
			return
		}
		if mine.traceID != sdk.TraceID() || mine.spanID != sdk.SpanID() || mine.flags != byte(sdk.TraceFlags()) {
			t.Fatalf("%q: bridge %x %x %02x, SDK %v", parent, mine.traceID, mine.spanID, mine.flags, sdk)
		}
		if len(state) <= maxStateLen && (mine.state != "") != (sdk.TraceState().Len() > 0) {
			t.Fatalf("tracestate %q: bridge keeps %v, SDK %v", state, mine.state != "", sdk.TraceState().String())
		}
		if len(state) > maxStateLen && mine.state != "" {
			t.Fatalf("kept a %d-character tracestate", len(state))
		}
		back := otelExtract(mine.traceparent(), mine.state)
		if back.TraceID() != mine.traceID || back.SpanID() != mine.spanID || byte(back.TraceFlags()) != mine.flags ||
			mine.state != "" && back.TraceState().Len() == 0 {
			t.Fatalf("%q: formatted %q, SDK reads %v", parent, mine.traceparent(), back)
		}
	})
}

// traceparent formats c as a version 00 traceparent.
func (c *spanContext) traceparent() string {
	var b [traceparentLen]byte
	return string(c.appendTraceparent(b[:0]))
}

// TestReadMeta: the usual _meta, with neither trace key in any spelling,
// is settled in one pass (absent: the edit adds both without looking);
// one that spells either key some way is looked at key by key.
func TestReadMeta(t *testing.T) {
	tp := "00-" + tpTrace + "-" + tpSpan + "-01"
	for _, tc := range []struct {
		meta          string
		parent, state string
		absent        bool
	}{
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"n","version":"1"}}`, "", "", true},
		{`{}`, "", "", true},
		{`{"traceparent":"` + tp + `","tracestate":"a=1"}`, tp, "a=1", false},
		{`{"TraceParent":"x"}`, "", "", false},     // a decoder would read it: look
		{`{"t\u0072acestate":"x"}`, "", "", false}, // an escaped letter: look
		{`{"note":"a race"}`, "", "", false},       // "race" anywhere: look (safe)
		{`"not an object"`, "", "", false},         // not an object: not absent
	} {
		var m wire.Message
		raw := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":` + tc.meta + `}}`
		if err := wire.Parse([]byte(raw), &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got := ReadMeta(&m)
		if got.Parent != tc.parent || got.State != tc.state || got.absent != tc.absent {
			t.Errorf("%s: ReadMeta = %+v, want parent %q state %q absent %v", tc.meta, got, tc.parent, tc.state, tc.absent)
		}
	}
	// What ReadMeta says of one message is not taken for another: an
	// absent read elsewhere must not make the edit add a second key.
	var plain, spelled wire.Message
	wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":1}}}`), &plain)
	wire.Parse([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"TraceParent":"x"}}}`), &spelled)
	other := ReadMeta(&plain)
	want := WithTraceContext(&spelled, tp, "")
	c := spelled
	if withTrace(&c, tp, "", &other); string(c.Raw) != string(want) && !(want == nil && string(c.Raw) == string(spelled.Raw)) {
		t.Errorf("with another message's ReadMeta: %s, want %s", c.Raw, want)
	}
}
