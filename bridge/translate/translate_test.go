package translate

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

func parse(t testing.TB, s string) *wire.Message {
	t.Helper()
	var m wire.Message
	if err := wire.Parse([]byte(s), &m); err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return &m
}

func TestVersions(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{[]string{"2025-11-25", "2026-07-28"}, "2026-07-28"},
		{[]string{"2027-03-01", "2026-09-01"}, "2026-09-01"},
		{[]string{"2025-11-25", "2025-06-18"}, ""},
		{nil, ""},
	} {
		if got := PickModern(tt.in); got != tt.want {
			t.Errorf("PickModern(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]string{"2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26", "2024-11-05": "2024-11-05", "1999-01-01": Legacy, "": Legacy} {
		if got := NegotiateLegacy(in); got != want {
			t.Errorf("NegotiateLegacy(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsLegacy("2024-11-05") || IsLegacy(Modern) || !IsModern(Modern) || IsModern(Legacy) {
		t.Error("era of a version")
	}
	m := parse(t, `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"]}}`)
	if got := SupportedVersions(m); !reflect.DeepEqual(got, []string{"2026-07-28", "2025-11-25"}) {
		t.Errorf("SupportedVersions = %q", got)
	}
}

func jsonEq(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s\n got %s\nwant %s", what, got, want)
	}
}

// The handshake both ways: what one era's peer said reaches the other's
// (capabilities, serverInfo, instructions), with defaults where it said
// nothing.
func TestHandshake(t *testing.T) {
	init := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"2"},"instructions":"use \"x\""}`
	disc := DiscoverFromInitialize([]byte(init))
	jsonEq(t, "discover", disc, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"use \"x\"","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}}`)
	jsonEq(t, "initialize", InitializeFromDiscover(disc, "2025-06-18"), `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"2"},"instructions":"use \"x\""}`)
	jsonEq(t, "discover of nothing", DiscoverFromInitialize(nil), `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-bridge remote","version":"unknown"}}}`)
	jsonEq(t, "initialize of nothing", InitializeFromDiscover([]byte(`{"capabilities":null}`), Legacy), `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"mcp-bridge remote","version":"unknown"}}`)
}

// The envelope both ways: a legacy session's state becomes a modern
// request's _meta, and a modern request's _meta opens a legacy session and
// is stripped from what the legacy peer sees.
func TestEnvelope(t *testing.T) {
	f := EnvelopeFields(Modern, []byte(`{"sampling":{}}`), []byte(`{"name":"h","version":"1"}`), "info")
	req := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p",` + string(f) + `}}}`
	m := parse(t, req)
	if m.ProtocolVersion != Modern || m.LogLevel != "info" || !m.HasClientCapabilities {
		t.Fatalf("envelope %s read as %+v", f, m)
	}
	jsonEq(t, "initialize params", InitializeParams(m), `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"h","version":"1"}}`)
	out, err := ToLegacy(m, []byte(`"b-1"`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "legacy request", out, `{"jsonrpc":"2.0","id":"b-1","method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}`)
	jsonEq(t, "initialize params without clientInfo", InitializeParams(parse(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)), `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bridge","version":"unknown"}}`)
}

// An input round both ways: the result one direction builds is the round
// the other reads, and the retry fields echo the state byte for byte.
func TestRounds(t *testing.T) {
	state := NewState()
	if len(state) < 20 || state == NewState() || !IsBridgeState(state) {
		t.Fatalf("NewState %q: not a fresh token", state)
	}
	res := InputRequired([]Input{{Key: "r1", Method: "roots/list"}, {Key: "r2", Method: "sampling/createMessage", Params: []byte(`{"maxTokens":3}`)}}, state)
	m := parse(t, string(wire.ResultResponse([]byte("1"), res)))
	if !IsInputRequired(m) {
		t.Fatalf("%s is not an input round", res)
	}
	r, err := ReadRound(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Requests) != 2 || r.Requests["r1"].Method != "roots/list" || string(r.Requests["r1"].Params) != "{}" || string(r.Requests["r2"].Params) != `{"maxTokens":3}` {
		t.Errorf("round %+v", r)
	}
	fields := RetryFields(map[string][]byte{"r2": []byte(`{"model":"m"}`), "r1": []byte(`{"roots":[]}`)}, r.State)
	retry := parse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x",`+string(fields)+`}}`)
	if !IsRetry(retry) || RetryState(retry) != state {
		t.Errorf("retry %s: state %q, want %q", fields, RetryState(retry), state)
	}
	if got := InputResponses(retry); len(got) != 2 || string(got["r1"]) != `{"roots":[]}` {
		t.Errorf("input responses %v", got)
	}
	// State only (load shedding): no inputResponses member.
	r, err = ReadRound(parse(t, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":{"opaque":1}}}`))
	if err != nil || string(RetryFields(nil, r.State)) != `"requestState":{"opaque":1}` {
		t.Errorf("state-only round: %q, %v", RetryFields(nil, r.State), err)
	}
	if _, err := ReadRound(parse(t, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`)); err != ErrEmptyRound {
		t.Errorf("empty round: %v", err)
	}
	if _, err := ReadRound(parse(t, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":[1]}}`)); err == nil {
		t.Error("malformed inputRequests accepted")
	}
	for _, method := range []string{"tools/call", "prompts/get", "resources/read"} {
		if !AllowsInput(method) {
			t.Errorf("%s may be answered with an input round", method)
		}
	}
	if AllowsInput("tools/list") {
		t.Error("tools/list may not")
	}
}

func TestRetargetProgress(t *testing.T) {
	n := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"first","progress":2}}`
	m := parse(t, n)
	if got := string(RetargetProgress([]byte(n), m, []byte(`7`))); got != `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2}}` {
		t.Errorf("retargeted: %s", got)
	}
	if got := RetargetProgress([]byte(n), m, []byte(`"first"`)); string(got) != n {
		t.Errorf("same token changed: %s", got)
	}
}

func TestComplete(t *testing.T) {
	m := parse(t, `{"jsonrpc":"2.0","id":"b-1","result":{"tools":[]}}`)
	jsonEq(t, "tools/list", Complete(m, "tools/list", []byte("3")), `{"jsonrpc":"2.0","id":3,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}`)
	m = parse(t, `{"jsonrpc":"2.0","id":"b-2","result":{"content":[]}}`)
	jsonEq(t, "tools/call", Complete(m, "tools/call", nil), `{"jsonrpc":"2.0","id":"b-2","result":{"content":[],"resultType":"complete"}}`)
}

// FuzzReadRound: whatever a modern peer sends as an input round, reading
// it never panics, and a round read without error yields retry fields
// that make a valid JSON object with the state echoed byte for byte.
func FuzzReadRound(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`))
	f.Add([]byte(`{"resultType":"input_required","requestState":{"x":[1,2]}}`))
	f.Add([]byte(`{"resultType":"input_required","inputRequests":null}`))
	f.Fuzz(func(t *testing.T, result []byte) {
		var m wire.Message
		if wire.Parse(wire.ResultResponse([]byte("1"), result), &m) != nil {
			return
		}
		r, err := ReadRound(&m)
		if err != nil {
			return
		}
		answers := map[string][]byte{}
		for k := range r.Requests {
			answers[k] = []byte(`{}`)
		}
		obj := append(append([]byte("{"), RetryFields(answers, r.State)...), '}')
		if !json.Valid(obj) {
			t.Fatalf("retry fields %s are not JSON", obj)
		}
	})
}

// A server's inputRequests become real requests to a 2025 client: only
// the three kinds mrtr allows, with object params (or none), may pass.
func TestReadRoundRefusesWhatIsNoInputRequest(t *testing.T) {
	for _, tc := range []struct {
		requests string
		ok       bool
	}{
		{`{"a":{"method":"roots/list"}}`, true},
		{`{"a":{"method":"roots/list","params":null}}`, true},
		{`{"a":{"method":"elicitation/create","params":{"message":"m"}}}`, true},
		{`{"a":{"method":"sampling/createMessage","params":{"messages":[]}}}`, true},
		{`{"a":{"method":"tools/call","params":{"name":"x"}}}`, false},
		{`{"a":{"method":"","params":{}}}`, false},
		{`{"a":{"params":{}}}`, false},
		{`{"a":{"method":"roots/list","params":[1,2]}}`, false},
		{`{"a":{"method":"elicitation/create","params":"text"}}`, false},
		{`{"a":{"method":"sampling/createMessage","params":5}}`, false},
		{`{"a":{"method":"roots/list"},"b":{"method":"ping"}}`, false},
	} {
		var m wire.Message
		raw := wire.ResultResponse([]byte("1"), []byte(`{"resultType":"input_required","inputRequests":`+tc.requests+`}`))
		if err := wire.Parse(raw, &m); err != nil {
			t.Fatal(err)
		}
		_, err := ReadRound(&m)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.requests, err)
		}
		if !tc.ok && !errors.Is(err, ErrBadInputRequest) {
			t.Errorf("%s: err = %v, want ErrBadInputRequest", tc.requests, err)
		}
	}
}
