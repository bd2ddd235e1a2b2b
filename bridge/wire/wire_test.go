package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustParse(t *testing.T, s string) *Message {
	t.Helper()
	var m Message
	if err := Parse([]byte(s), &m); err != nil {
		t.Fatalf("Parse(%s) = %v", s, err)
	}
	return &m
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in   string
		kind Kind
		id   string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest, "1"},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"x"}`, KindRequest, `"a\"b"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, KindNotification, ""},
		{`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`, KindResponse, "9007199254740993"},
		{` {"id" : 7 , "error" : {"code": -32601, "message":"m"}, "jsonrpc":"2.0"} `, KindResponse, "7"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}`, KindResponse, "null"},
	}
	for _, tt := range tests {
		m := mustParse(t, tt.in)
		if m.Kind != tt.kind || string(m.IDBytes()) != tt.id {
			t.Errorf("Parse(%s): kind=%v id=%s, want %v %s", tt.in, m.Kind, m.IDBytes(), tt.kind, tt.id)
		}
	}
}

func TestParseFields(t *testing.T) {
	m := mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1,"filter":"visibility != \"PRIVATE\""},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"list-demo-6","io.modelcontextprotocol/logLevel":"info"}}}`)
	if m.Method != "tools/call" || m.Name != "memo_list_memos" || m.ProtocolVersion != "2026-07-28" || !m.HasClientCapabilities || m.LogLevel != "info" {
		t.Errorf("fields: %+v", m)
	}
	if got := string(m.Bytes(m.ProgressToken)); got != `"list-demo-6"` {
		t.Errorf("progress token = %s", got)
	}
	if got := string(m.Bytes(m.Arguments)); !strings.HasPrefix(got, `{"pageSize":1`) {
		t.Errorf("arguments = %s", got)
	}
	n := mustParse(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":17,"progress":1}}`)
	if string(n.Bytes(n.ProgressToken)) != "17" {
		t.Errorf("notification progress token = %q", n.Bytes(n.ProgressToken))
	}
	c := mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":"r"}}`)
	if string(c.Bytes(c.RequestID)) != `"x"` {
		t.Errorf("requestId = %q", c.Bytes(c.RequestID))
	}
	s := mustParse(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":42}}}`)
	if string(s.Bytes(s.SubscriptionID)) != "42" {
		t.Errorf("subscriptionId = %q", s.Bytes(s.SubscriptionID))
	}
	e := mustParse(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x"}}`)
	if e.ErrorCode != -32022 {
		t.Errorf("error code = %d", e.ErrorCode)
	}
	u := mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a\u00e9"}}`)
	if u.URI != "file:///aé" {
		t.Errorf("uri = %q", u.URI)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `[{"id":1}]`, `{"id":1}`, `{"id":1,"method":"x"`, `{"a":"\"}`, `{"a":1}}`, `"x"`, `{"method":"x","params":{"a":[}]}}`, `{"id":1,"method":"m"} x`} {
		var m Message
		if err := Parse([]byte(in), &m); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
	var m Message
	if err := Parse([]byte(`[{"jsonrpc":"2.0","method":"a"}]`), &m); !errors.Is(err, ErrNotMessage) {
		t.Errorf("batch: %v, want ErrNotMessage", err)
	}
}

func TestSplice(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":"client-1","method":"tools/call","params":{"_meta":{"progressToken":"p"}}}`)
	m := mustParse(t, string(raw))
	out := Splice(raw, Edit{m.ProgressToken, []byte("77")}, Edit{m.ID, []byte("12")})
	want := `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"_meta":{"progressToken":77}}}`
	if string(out) != want {
		t.Errorf("Splice = %s\nwant   %s", out, want)
	}
	if string(raw) != `{"jsonrpc":"2.0","id":"client-1","method":"tools/call","params":{"_meta":{"progressToken":"p"}}}` {
		t.Error("Splice modified its input")
	}
}

func TestBuilders(t *testing.T) {
	for _, b := range [][]byte{
		ErrorResponse(nil, CodeParseError, "Parse error: \"bad\"\n", nil),
		ErrorResponse([]byte(`"x"`), CodeUnsupportedVersion, "Unsupported protocol version", []byte(`{"supported":["2026-07-28"]}`)),
		ResultResponse([]byte("1"), []byte(`{}`)),
		Notification("notifications/cancelled", []byte(`{"requestId":1}`)),
		Request([]byte("5"), "ping", nil),
		AppendString(nil, "中文\x01\xff\t"),
	} {
		if !json.Valid(b) || strings.ContainsAny(string(b), "\n\r") {
			t.Errorf("invalid or multi-line output: %s", b)
		}
	}
	var s string
	json.Unmarshal(AppendString(nil, "a\"b\\c\u2028中"), &s)
	if s != "a\"b\\c\u2028中" {
		t.Errorf("AppendString round trip = %q", s)
	}
}

func TestParseIntID(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "42": 42, "-7": -7, "9007199254740993": 9007199254740993} {
		if got, ok := ParseIntID([]byte(in)); !ok || got != want {
			t.Errorf("ParseIntID(%s) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{`"1"`, "1.5", "", "-", "1e3", "12345678901234567890"} {
		if _, ok := ParseIntID([]byte(in)); ok {
			t.Errorf("ParseIntID(%s) ok", in)
		}
	}
}

func TestHeaderValueEncoding(t *testing.T) {
	// The table from streamable-http §Value encoding.
	tests := map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"":                   "",
	}
	for in, want := range tests {
		if got := EncodeHeaderValue(in); got != want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
		if got, err := DecodeHeaderValue(want); err != nil || got != in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v", want, got, err)
		}
	}
	if got, _ := DecodeHeaderValue("  foo \t"); got != "foo" {
		t.Errorf("OWS not trimmed: %q", got)
	}
	for _, bad := range []string{"=?base64?!!!?=", "caf\xc3\xa9", "a\x01b"} {
		if _, err := DecodeHeaderValue(bad); !errors.Is(err, ErrHeaderValue) {
			t.Errorf("DecodeHeaderValue(%q) = %v, want ErrHeaderValue", bad, err)
		}
	}
}

func TestToolBindings(t *testing.T) {
	good := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},"n":{"type":["integer","null"],"x-mcp-header":"N"},"q":{"type":"string","default":{"x-mcp-header":"ignored"}}}}`
	bs, err := ToolBindings([]byte(good))
	if err != nil || len(bs) != 3 {
		t.Fatalf("ToolBindings = %v, %v", bs, err)
	}
	vals, present, err := ParamValues([]byte(`{"region":"us-west1","opts":{"dry":true},"n":null}`), bs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, b := range bs {
		if present[i] {
			got[b.Header] = vals[i]
		}
	}
	if got["Region"] != "us-west1" || got["Dry-Run"] != "true" || len(got) != 2 {
		t.Errorf("values = %v", got)
	}
	for name, bad := range map[string]string{
		"in items":      `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		"in oneOf":      `{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
		"number type":   `{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		"not a token":   `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
		"empty":         `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"duplicate":     `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`,
		"at root":       `{"type":"string","x-mcp-header":"X"}`,
		"through $defs": `{"type":"object","$defs":{"d":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}}`,
	} {
		if _, err := ToolBindings([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}
	if !SameParamValue("integer", "42.0", "42") || SameParamValue("string", "42.0", "42") {
		t.Error("SameParamValue integer comparison")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
		`[{"a":1}]`, `{"a":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m Message
		if err := Parse(in, &m); err != nil {
			return
		}
		for _, sp := range []Span{m.ID, m.Params, m.Result, m.Error, m.Arguments, m.Meta, m.ProgressToken, m.RequestID, m.SubscriptionID} {
			if sp.Start < 0 || sp.End > len(in) || sp.Start > sp.End {
				t.Fatalf("span %v out of range", sp)
			}
		}
		// Whatever Parse accepted as a message, when the input is valid JSON,
		// must agree with encoding/json about the id: escapes, duplicates
		// and case variants included (FuzzEnvelope checks every routed
		// field).
		if json.Valid(in) && m.ID.Present() {
			var env struct{ ID json.RawMessage }
			if json.Unmarshal(in, &env) == nil && string(env.ID) != string(m.IDBytes()) {
				t.Fatalf("id %s, encoding/json says %s", m.IDBytes(), env.ID)
			}
		}
		// Dropping members keeps a valid object valid.
		if json.Valid(in) && m.Params.Present() {
			if out := WithoutFields(in, m.Params, "name", "_meta", "progressToken"); !json.Valid(out) {
				t.Fatalf("WithoutFields made %s of %s", out, in)
			}
		}
		out := Splice(in, Edit{m.ID, []byte("1")})
		if m.ID.Present() {
			var m2 Message
			if err := Parse(out, &m2); err != nil {
				t.Fatalf("re-parse after id splice: %v", err)
			}
		}
	})
}

func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"us-west1", "Hello, 世界", " x", "=?base64?x?=", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] < 0x20 || enc[i] > 0x7e {
				t.Fatalf("encoded value %q has byte %#x", enc, enc[i])
			}
		}
		dec, err := DecodeHeaderValue(enc)
		if err != nil {
			t.Fatalf("DecodeHeaderValue(EncodeHeaderValue(%q)) error %v", s, err)
		}
		want := s
		if plainSafe(s) {
			want = strings.Trim(s, " \t")
		}
		if dec != want {
			t.Fatalf("round trip %q -> %q -> %q", s, enc, dec)
		}
	})
}

func BenchmarkParseRequest(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1,"filter":"visibility != \"PRIVATE\""},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	var m Message
	for b.Loop() {
		if err := Parse(raw, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLargeResult(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 1<<17) + `"}]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	var m Message
	for b.Loop() {
		if err := Parse(raw, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemapID is the per-message work of the serve direction: parse a
// child's response and splice the client's id back in.
func BenchmarkRemapID(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"hello world"}],"resultType":"complete"}}`)
	orig := []byte(`"client-request-7"`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	var m Message
	for b.Loop() {
		if err := Parse(raw, &m); err != nil {
			b.Fatal(err)
		}
		_ = Splice(raw, Edit{Span: m.ID, Value: orig})
	}
}

// BenchmarkStripLargeResult is the per-response work of a legacy host in
// front of a 2026-07-28 server: drop the era's result fields from a large
// tool result.
func BenchmarkStripLargeResult(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 1<<17) + `"}],"ttlMs":0}}`)
	var m Message
	if err := Parse(raw, &m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		_ = WithoutFields(raw, m.Result, "resultType", "ttlMs", "cacheScope")
	}
}

// AppendString against encoding/json: a valid one-line JSON string that
// decodes to s, each byte that is not UTF-8 read as U+FFFD (as Marshal
// writes it).
func FuzzAppendString(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("a\"b\\c\u2028中\x01\xff\t\n\r")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString([]byte("x"), s)
		if b[0] != 'x' || !json.Valid(b[1:]) || strings.ContainsAny(string(b), "\n\r") {
			t.Fatalf("%q: invalid or multi-line %q", s, b)
		}
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Fatal(err)
		}
		want := []rune{}
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			want = append(want, r) // an invalid byte is RuneError, n 1
			i += n
		}
		if got != string(want) {
			t.Fatalf("%q: decodes to %q, want %q", s, got, string(want))
		}
	})
}

// Field2 is Field of each key, in one walk.
func FuzzField2(f *testing.F) {
	f.Add([]byte(`{"traceparent":"x","tracestate":"y","a":1}`), "traceparent", "tracestate")
	f.Add([]byte(`{"TraceParent":1,"traceparent":2,"t\u0072acestate":{}}`), "traceparent", "tracestate")
	f.Add([]byte(`{"a":1,"a":2,"b":[1,{"a":3}]}`), "a", "b")
	f.Fuzz(func(t *testing.T, raw []byte, k1, k2 string) {
		obj := Span{0, len(raw)}
		if len(raw) == 0 {
			obj = Span{}
		}
		s1, ok1, s2, ok2 := Field2(raw, obj, k1, k2)
		w1, wok1 := Field(raw, obj, k1)
		w2, wok2 := Field(raw, obj, k2)
		if ok1 != wok1 || ok2 != wok2 || (ok1 && s1 != w1) || (ok2 && s2 != w2) {
			t.Fatalf("%s %q %q: Field2 %v %v %v %v, Field %v %v %v %v", raw, k1, k2, s1, ok1, s2, ok2, w1, wok1, w2, wok2)
		}
	})
}
