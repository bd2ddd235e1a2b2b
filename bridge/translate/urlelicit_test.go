package translate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

const urlError = `{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"This request requires more information.","data":{"elicitations":[{"mode":"url","elicitationId":"550e8400","url":"https://oauth.example.com/authorize?x=1","message":"Authorization is required."}]}}}`

// A -32042 error becomes an input round with the URL elicitation (without
// the 2025-only elicitationId), and the retry of that round reads back as
// the legacy request, with the ids to wait for.
func TestURLElicitationRound(t *testing.T) {
	els, ok := URLElicitations(parse(t, urlError))
	if !ok || len(els) != 1 || els[0].ID != "550e8400" {
		t.Fatalf("URLElicitations = %+v, %v", els, ok)
	}
	round := URLRound(els)
	var r struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]InputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}
	if err := json.Unmarshal(round, &r); err != nil {
		t.Fatal(err)
	}
	q := r.InputRequests["url-0"]
	if r.ResultType != "input_required" || q.Method != "elicitation/create" || len(r.InputRequests) != 1 {
		t.Fatalf("round %s", round)
	}
	jsonEq(t, "url params", q.Params, `{"mode":"url","url":"https://oauth.example.com/authorize?x=1","message":"Authorization is required."}`)

	st, _ := json.Marshal(r.RequestState)
	retry := parse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"connect","arguments":{},"inputResponses":{"url-0":{"action":"accept"}},"requestState":`+string(st)+`,"_meta":{"progressToken":"p"}}}`)
	if !IsURLRetry(retry) || IsURLRetry(parse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"requestState":"mcp-bridge:x"}}`)) {
		t.Fatal("IsURLRetry")
	}
	rr, ok := ReadURLRetry(retry)
	if !ok || rr.Declined || len(rr.IDs) != 1 || rr.IDs[0] != "550e8400" {
		t.Fatalf("ReadURLRetry = %+v, %v", rr, ok)
	}
	jsonEq(t, "legacy retry", rr.Request, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"connect","arguments":{},"_meta":{"progressToken":"p"}}}`)

	declined := parse(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"connect","inputResponses":{"url-0":{"action":"decline"}},"requestState":`+string(st)+`}}`)
	if rr, _ := ReadURLRetry(declined); !rr.Declined {
		t.Error("a declined URL elicitation reads as accepted")
	}
}

// URLAnswer: a round for a URL-capable peer, -32021 for one that is not,
// nothing for methods that take no input round or other responses.
func TestURLAnswer(t *testing.T) {
	var url, form wire.Capabilities
	json.Unmarshal([]byte(`{"elicitation":{"url":{}}}`), &url)
	json.Unmarshal([]byte(`{"elicitation":{}}`), &form)
	fm := parse(t, urlError)
	if got := URLAnswer(fm, "tools/call", url, []byte(`7`)); !strings.HasPrefix(string(got), `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required"`) {
		t.Errorf("URL-capable: %s", got)
	}
	if got := URLAnswer(fm, "prompts/get", form, []byte(`7`)); !strings.Contains(string(got), `"code":-32021`) || !strings.Contains(string(got), `"requiredCapabilities":{"elicitation":{"url":{}}}`) {
		t.Errorf("form-only: %s", got)
	}
	if got := URLAnswer(fm, "tools/list", url, []byte(`7`)); got != nil {
		t.Errorf("tools/list (no input rounds): %s", got)
	}
	if got := URLAnswer(parse(t, `{"jsonrpc":"2.0","id":2,"result":{}}`), "tools/call", url, []byte(`7`)); got != nil {
		t.Errorf("a result: %s", got)
	}
}

// Errors that are not a well-formed URLElicitationRequiredError travel as
// they are.
func TestURLElicitationsRejects(t *testing.T) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"x","data":{"elicitations":[{"mode":"url","elicitationId":"a","url":"https://x"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"x","data":{"elicitations":[]}}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"x","data":{"elicitations":[{"mode":"form","elicitationId":"a","url":"https://x"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"x","data":{"elicitations":[{"mode":"url","url":"https://x"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
	} {
		if els, ok := URLElicitations(parse(t, s)); ok {
			t.Errorf("URLElicitations(%s) = %+v", s, els)
		}
	}
}

// A URL-mode input request gets the elicitationId a 2025-11-25 client
// requires; form requests and other methods pass untouched.
func TestLegacyInputParams(t *testing.T) {
	got := LegacyInputParams("elicitation/create", []byte(`{"mode":"url","url":"https://x","message":"m"}`))
	var p map[string]string
	if json.Unmarshal(got, &p) != nil || !strings.HasPrefix(p["elicitationId"], "mcp-bridge-") || p["url"] != "https://x" {
		t.Errorf("LegacyInputParams = %s", got)
	}
	for _, in := range []string{`{"mode":"url","url":"https://x","elicitationId":"keep"}`, `{"message":"m","requestedSchema":{}}`} {
		if got := LegacyInputParams("elicitation/create", []byte(in)); string(got) != in {
			t.Errorf("LegacyInputParams(%s) = %s", in, got)
		}
	}
	if got := LegacyInputParams("sampling/createMessage", []byte(`{"mode":"url"}`)); string(got) != `{"mode":"url"}` {
		t.Errorf("sampling params changed: %s", got)
	}
}

func TestCovers(t *testing.T) {
	caps := func(s string) wire.Capabilities {
		var c wire.Capabilities
		json.Unmarshal([]byte(s), &c)
		return c
	}
	tools := `{"messages":[],"maxTokens":10,"tools":[{"name":"t","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`
	plain := `{"messages":[],"maxTokens":10}`
	url := `{"mode":"url","url":"https://x","message":"m"}`
	form := `{"message":"m","requestedSchema":{"type":"object"}}`
	for _, tt := range []struct {
		caps, method, params string
		want                 bool
	}{
		{`{"sampling":{}}`, "sampling/createMessage", plain, true},
		{`{"sampling":{}}`, "sampling/createMessage", tools, false},
		{`{"sampling":{"tools":{}}}`, "sampling/createMessage", tools, true},
		{`{}`, "sampling/createMessage", plain, false},
		{`{"elicitation":{}}`, "elicitation/create", form, true},
		{`{"elicitation":{}}`, "elicitation/create", url, false},
		{`{"elicitation":{"form":{}}}`, "elicitation/create", url, false},
		{`{"elicitation":{"url":{}}}`, "elicitation/create", url, true},
		{`{"elicitation":{"url":{}}}`, "elicitation/create", form, false},
		{`{"elicitation":{"form":{},"url":{}}}`, "elicitation/create", form, true},
		{`{"roots":{}}`, "roots/list", ``, true},
	} {
		if got := Covers(caps(tt.caps), tt.method, []byte(tt.params)); got != tt.want {
			t.Errorf("Covers(%s, %s, %s) = %v", tt.caps, tt.method, tt.params, got)
		}
	}
}

// Wait returns when the completions arrive, and gives up at its bound.
func TestCompletions(t *testing.T) {
	var c Completions
	done := make(chan bool)
	go func() { done <- c.Wait(context.Background(), []string{"a", "b"}, time.Minute) }()
	c.Complete("a")
	c.Complete("b")
	if !<-done {
		t.Error("Wait did not see both completions")
	}
	if !c.Wait(context.Background(), []string{"a"}, time.Minute) {
		t.Error("a completion seen before the wait is forgotten")
	}
	if c.Wait(context.Background(), []string{"never"}, 10*time.Millisecond) {
		t.Error("Wait for an unknown id succeeded")
	}
	if CompletedElicitation(parse(t, `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"x"}}`)) != "x" {
		t.Error("CompletedElicitation")
	}
	if !c.Record(parse(t, `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"y"}}`)) ||
		!c.Wait(context.Background(), []string{"y"}, time.Minute) {
		t.Error("Record did not complete y")
	}
	if c.Record(parse(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"elicitationId":"z"}}`)) {
		t.Error("Record took a notifications/message")
	}
	for i := range maxCompletions + 10 {
		c.Complete(string(rune('A' + i)))
	}
	if len(c.done) != maxCompletions {
		t.Errorf("%d completions kept, want the bound %d", len(c.done), maxCompletions)
	}
}

// FuzzURLElicitations: any error a legacy server sends either reads as
// URL elicitations whose round is valid JSON, or not at all; any retry a
// 2026-07-28 peer sends (its requestState is the peer's to mangle) reads
// as a URL retry whose legacy request is valid JSON, or not at all.
func FuzzURLElicitations(f *testing.F) {
	f.Add([]byte(urlError))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"x","data":{"elicitations":[{"mode":"url","elicitationId":"a","url":"u"},{"mode":"url","elicitationId":"b","url":"v","x":[1]}]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c","inputResponses":{"url-0":{"action":"accept"},"url-1":[]},"requestState":"mcp-bridge-url:WyJhIiwiYiJd"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m wire.Message
		if !wire.Valid(raw) || wire.Parse(raw, &m) != nil {
			return
		}
		if els, ok := URLElicitations(&m); ok {
			if round := URLRound(els); !json.Valid(round) {
				t.Fatalf("round %s from %s is not JSON", round, raw)
			}
		}
		if rr, ok := ReadURLRetry(&m); ok && !json.Valid(rr.Request) {
			t.Fatalf("legacy request %s from %s is not JSON", rr.Request, raw)
		}
	})
}
