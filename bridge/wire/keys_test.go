package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// hostile are messages in which a routed key is duplicated, escaped or in
// another spelling, at every level Parse reads. A Go peer reads each of
// them differently from a byte-for-byte reader.
var hostile = []string{
	// The envelope.
	`{"jsonrpc":"2.0","\u0069d":7,"method":"tools/call","params":{"name":"a"}}`,
	`{"jsonrpc":"2.0","ID":7,"method":"tools/call","params":{"name":"a"}}`,
	`{"jsonrpc":"2.0","Id":7,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"id":7,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","\u006dethod":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{},"PARAMS":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"\u0065rror":{}}`,
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"JSONRPC":"2.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id\u0000":1,"method":"x"}`,
	`{"jsonrpc":"2.0","\u0130d":1,"method":"x"}`, // İ: unicode.ToLower gives i
	"{\"jsonrpc\":\"2.0\",\"\u0130d\":1,\"method\":\"x\"}",
	// params.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{},"Arguments":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a","URI":"b"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"request\u0049d":2}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestID":2}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress\u0054oken":2,"progress":1}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progresstoken":2}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progre\u017fsToken\":2}}", // ſ folds to s
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressTo\u212aen\":2}}", // Kelvin sign folds to k
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"a","Cursor":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"mine","taskId":"theirs"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"mine","task\u0049d":"theirs"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"mine","TaskId":"theirs"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"_Meta":{"progressToken":9}}}`,
	// params._meta.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1,"progressToken":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progress\u0054oken":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"ProgressToken":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","IO.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1,"io.modelcontextprotocol/subscriptionID":2}}}`,
	// error.
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"Code":1,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{},"data":{}}}`,
}

func TestParseRefusesAmbiguousKeys(t *testing.T) {
	for _, in := range hostile {
		var m Message
		if err := Parse([]byte(in), &m); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("Parse(%s) = %v, want ErrAmbiguous", in, err)
		}
	}
}

func TestParseAcceptsUnroutedEscapes(t *testing.T) {
	// Keys the bridge does not read may be written any way JSON allows; a
	// routed key deeper than Parse reads (inside arguments or a result) is
	// the tool's business.
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"\u0069d":1,"id":2,"ID":3}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"\u0069d":1,"ID":2,"id":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"com.example/caf\u00e9":1,"com.example/café":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"other":1,"other":2,"i\u0064x":3}}`,
		`{"jsonrpc":"2.0","id":"\u0031","method":"x"}`,
		`{"jsonrpc":"2.0","method":"x","params":["name","id"]}`,
	} {
		var m Message
		if err := Parse([]byte(in), &m); err != nil {
			t.Errorf("Parse(%s) = %v", in, err)
		}
	}
}

func TestParseIDAndShape(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1.0,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
		`{"jsonrpc":"2.0","id":01,"method":"x"}`,
		`{"jsonrpc":"2.0","id":-0.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":1}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`,
	} {
		var m Message
		if err := Parse([]byte(in), &m); !errors.Is(err, ErrNotMessage) {
			t.Errorf("Parse(%s) = %v, want ErrNotMessage", in, err)
		}
	}
	for _, in := range []string{"\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"x"}{}`} {
		var m Message
		if err := Parse([]byte(in), &m); !errors.Is(err, ErrSyntax) || json.Valid([]byte(in)) {
			t.Errorf("Parse(%q) = %v (json.Valid %v), want both to refuse", in, err, json.Valid([]byte(in)))
		}
	}
}

func TestParseDepthAgreesWithEncodingJSON(t *testing.T) {
	// encoding/json accepts 10000 levels, counted from the outermost value.
	for _, depth := range []int{9999, 10000, 10001} {
		for where, in := range map[string]string{
			"result": `{"jsonrpc":"2.0","id":1,"result":{"a":` + nest(depth-2) + `}}`,
			"params": `{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":` + nest(depth-2) + `}}`,
			"_meta":  `{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"a":` + nest(depth-3) + `}}}`,
			"error":  `{"jsonrpc":"2.0","id":1,"error":{"code":1,"data":` + nest(depth-2) + `}}`,
		} {
			var m Message
			err := Parse([]byte(in), &m)
			if valid := json.Valid([]byte(in)); (err == nil) != valid {
				t.Errorf("depth %d in %s: Parse %v, json.Valid %v", depth, where, err, valid)
			}
		}
	}
}

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestFieldRefusesAmbiguity(t *testing.T) {
	raw := []byte(`{"a":{"_meta":{"x":1},"tools":[],"Tools":[1],"v":1,"v":2,"w\u0031":1,"w1":2,"ok":3}}`)
	var m Message
	obj := Span{5, len(raw) - 1}
	_ = m
	for key, want := range map[string]bool{"_meta": true, "tools": false, "v": false, "w1": false, "ok": true, "absent": false} {
		if _, ok := Field(raw, obj, key); ok != want {
			t.Errorf("Field(%s) ok=%v, want %v", key, ok, want)
		}
	}
}

func TestParamValuesRefusesCaseVariants(t *testing.T) {
	bs := []ParamBinding{{Header: "Region", Path: []string{"region"}, Type: "string"}}
	for args, want := range map[string]error{
		`{"region":"us"}`:                    nil,
		`{"region":"us","Region":"eu"}`:      ErrAmbiguous,
		`{"Region":"eu","region":"us"}`:      ErrAmbiguous,
		`{"region":"us","regio\u006e":"eu"}`: nil, // decoded to the same key: last wins for every decoder
	} {
		vals, _, err := ParamValues([]byte(args), bs)
		if !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Errorf("ParamValues(%s) = %v, %v; want %v", args, vals, err, want)
		}
	}
	vals, _, _ := ParamValues([]byte(`{"region":"us","regio\u006e":"eu"}`), bs)
	if vals[0] != "eu" {
		t.Errorf("last duplicate: %q, want eu (what every decoder reads)", vals[0])
	}
}

// The oracle: what a Go peer reads from a message (encoding/json, with its
// case-insensitive matching and last duplicate winning), and what a peer
// with exact keys reads (a map: TypeScript's JSON.parse, Python's json).
type goEnvelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type goParams struct {
	Name          json.RawMessage `json:"name"`
	URI           json.RawMessage `json:"uri"`
	Arguments     json.RawMessage `json:"arguments"`
	Meta          json.RawMessage `json:"_meta"`
	RequestID     json.RawMessage `json:"requestId"`
	ProgressToken json.RawMessage `json:"progressToken"`
	Cursor        json.RawMessage `json:"cursor"`
}

type goMeta struct {
	ProgressToken      json.RawMessage `json:"progressToken"`
	ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	LogLevel           json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	SubscriptionID     json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
}

type goError struct {
	Code json.RawMessage `json:"code"`
}

// readings decodes obj both ways; raw is nil when obj is not an object.
func readings(t *testing.T, obj []byte, goDst any) (exact map[string]json.RawMessage) {
	t.Helper()
	// Whitespace before the object is JSON too (the fuzzer found the
	// oracle skipping " {...}" that Parse reads).
	if o := bytes.TrimLeft(obj, " \t\r\n"); len(o) == 0 || o[0] != '{' {
		return nil
	}
	if err := json.Unmarshal(obj, goDst); err != nil {
		t.Fatalf("encoding/json cannot read %s: %v", obj, err)
	}
	if err := json.Unmarshal(obj, &exact); err != nil {
		t.Fatalf("encoding/json cannot read %s into a map: %v", obj, err)
	}
	return exact
}

// agree checks that Parse's span sp reads what both peers read.
func agree(t *testing.T, what string, in []byte, sp Span, goV json.RawMessage, exact map[string]json.RawMessage, key string) {
	t.Helper()
	var got []byte
	if sp.Present() {
		got = in[sp.Start:sp.End]
	}
	if !bytes.Equal(got, goV) && !(got == nil && string(goV) == "null") {
		t.Fatalf("%s: Parse read %s, a Go peer %s, in %s", what, got, goV, in)
	}
	if exact != nil && !bytes.Equal(got, exact[key]) && !(got == nil && string(exact[key]) == "null") {
		t.Fatalf("%s: Parse read %s, an exact-key peer %s, in %s", what, got, exact[key], in)
	}
}

func agreeString(t *testing.T, what string, in []byte, got string, goV json.RawMessage) {
	t.Helper()
	var want string
	if len(goV) > 0 && goV[0] == '"' {
		if err := json.Unmarshal(goV, &want); err != nil {
			t.Fatal(err)
		}
	}
	if got != want {
		t.Fatalf("%s: Parse read %q, a Go peer %q, in %s", what, got, want, in)
	}
}

// checkOneReading is the differential oracle of FuzzEnvelope: whatever
// Parse accepts, it reads as encoding/json and an exact-key decoder do.
func checkOneReading(t *testing.T, in []byte) {
	var m Message
	err := Parse(in, &m)
	if !json.Valid(in) {
		return // callers refuse invalid JSON before Parse (doc.go)
	}
	if err != nil {
		// A valid object is never "malformed" to Parse (a bare value or
		// an array is not a message at all).
		if errors.Is(err, ErrSyntax) && bytes.HasPrefix(bytes.TrimLeft(in, " \t\r\n"), []byte("{")) {
			t.Fatalf("Parse refused a valid JSON object as malformed: %s", in)
		}
		return
	}
	var env goEnvelope
	top := readings(t, in, &env)
	if m.Kind == KindNotification {
		if env.ID != nil && string(env.ID) != "null" {
			t.Fatalf("notification, but a Go peer reads id %s in %s", env.ID, in)
		}
	} else {
		agree(t, "id", in, m.ID, env.ID, top, "id")
	}
	agreeString(t, "method", in, m.Method, env.Method)
	agree(t, "params", in, m.Params, env.Params, top, "params")
	agree(t, "result", in, m.Result, env.Result, top, "result")
	agree(t, "error", in, m.Error, env.Error, top, "error")

	var p goParams
	pm := readings(t, env.Params, &p)
	if pm != nil {
		agreeString(t, "params.name", in, m.Name, p.Name)
		agreeString(t, "params.uri", in, m.URI, p.URI)
		agree(t, "params.arguments", in, m.Arguments, p.Arguments, pm, "arguments")
		agree(t, "params._meta", in, m.Meta, p.Meta, pm, "_meta")
		agree(t, "params.requestId", in, m.RequestID, p.RequestID, pm, "requestId")
		if m.Method == "notifications/progress" && m.Kind == KindNotification {
			agree(t, "params.progressToken", in, m.ProgressToken, p.ProgressToken, pm, "progressToken")
		}
		if c, ok := StringField(in, m.Params, "cursor"); ok {
			agreeString(t, "params.cursor", in, c, p.Cursor)
		}
	}
	var meta goMeta
	mm := readings(t, p.Meta, &meta)
	if mm != nil {
		if m.Kind == KindRequest {
			agree(t, "_meta.progressToken", in, m.ProgressToken, meta.ProgressToken, mm, "progressToken")
		}
		agreeString(t, "protocolVersion", in, m.ProtocolVersion, meta.ProtocolVersion)
		agreeString(t, "logLevel", in, m.LogLevel, meta.LogLevel)
		agree(t, "subscriptionId", in, m.SubscriptionID, meta.SubscriptionID, mm, MetaSubscriptionID)
		if m.HasClientCapabilities != (meta.ClientCapabilities != nil) {
			t.Fatalf("clientCapabilities: Parse %v, a Go peer %s, in %s", m.HasClientCapabilities, meta.ClientCapabilities, in)
		}
	}
	var e goError
	if readings(t, env.Error, &e) != nil {
		want, _ := strconv.Atoi(string(e.Code))
		if m.ErrorCode != want {
			t.Fatalf("error.code: Parse %d, a Go peer %s, in %s", m.ErrorCode, e.Code, in)
		}
	}
	// Field, for what callers read from results.
	var r struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if rm := readings(t, env.Result, &r); rm != nil {
		if sp, ok := Field(in, m.Result, "_meta"); ok {
			agree(t, "result._meta", in, sp, r.Meta, rm, "_meta")
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	for _, s := range hostile {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p","io.modelcontextprotocol/logLevel":"info"}}}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":4},"x":1}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m","data":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":"r"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":17,"progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c\u0031"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"_Meta":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkOneReading(t, in)
	})
}

// TestOneReadingSeeds runs the oracle over the hostile shapes turned
// harmless (each ambiguous key renamed), so the comparison itself is
// exercised on every level even where Parse refuses the original.
func TestOneReadingSeeds(t *testing.T) {
	for _, in := range hostile {
		checkOneReading(t, []byte(in))
		checkOneReading(t, []byte(strings.NewReplacer(`\u`, `u`, `"ID"`, `"x"`).Replace(in)))
	}
}

// BenchmarkParseEscapedKey is the rare path of the key check: a _meta key
// with non-ASCII letters is decoded to be compared with the routed ones.
func BenchmarkParseEscapedKey(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{},"_meta":{"com.example/caf\u00e9":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	var m Message
	for b.Loop() {
		if err := Parse(raw, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseInvalidUTF8ReadsAsEncodingJSON(t *testing.T) {
	in := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xffb\"}}")
	m := mustParse(t, string(in))
	if m.Name != "a\ufffdb" {
		t.Errorf("name %q, want %q (what encoding/json reads)", m.Name, "a\ufffdb")
	}
	checkOneReading(t, in)
}

func TestRefusal(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","ID":1,"method":"x"}`:        `Invalid Request: ambiguous message (a routed key is duplicated, escaped or in another spelling): key "ID" for id`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`: `Invalid Request: ambiguous message (a routed key is duplicated, escaped or in another spelling): key "id" twice`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`:      "Invalid Request: not a JSON-RPC message: id must be a string, an integer or null",
		`{"jsonrpc":"2.0","id":1,"method":"x"`:         "Invalid Request: not a JSON-RPC message",
	} {
		var m Message
		if got := Refusal(Parse([]byte(in), &m)); got != want {
			t.Errorf("Refusal(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestParseNullMemberOfResponse(t *testing.T) {
	ok := mustParse(t, `{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":null}`)
	if ok.Kind != KindResponse || ok.Error.Present() || string(ok.Bytes(ok.Result)) != `{"a":1}` {
		t.Errorf("result with error null: %+v", ok)
	}
	e := mustParse(t, `{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-32601,"message":"m"}}`)
	if e.Kind != KindResponse || e.Result.Present() || e.ErrorCode != -32601 {
		t.Errorf("error with result null: %+v", e)
	}
	n := mustParse(t, `{"jsonrpc":"2.0","id":1,"result":null}`)
	if !n.Result.Present() {
		t.Error("a null result is a result")
	}
	checkOneReading(t, ok.Raw)
	checkOneReading(t, e.Raw)
}
