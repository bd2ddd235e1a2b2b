package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// The values FuzzSpliceParsed puts in place of an id, a progress token,
// a subscription id or a request id: each of a kind Parse takes there.
var spliceValues = [...][]byte{[]byte(`7`), []byte(`"a\"b"`), []byte(`-123456789012`), []byte(`"é"`), []byte(`""`)}

// FuzzSpliceParsed: whatever message, and whichever of its ids, tokens
// and subscription ids are replaced (plus fields inserted into its result
// object), SpliceParsed's re-based parse of the result is what Parse
// reads from it afresh.
func FuzzSpliceParsed(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":41,"result":{"content":[],"_meta":{"io.modelcontextprotocol/subscriptionId":41}}}`), []byte{1, 2, 3})
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":12,"progress":1}}`), []byte{4})
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"n","_meta":{"progressToken":"t","io.modelcontextprotocol/subscriptionId":"s"}}}`), []byte{0, 1, 2, 3})
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`), []byte{2})
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"},"result":null}`), []byte{1})
	f.Fuzz(func(t *testing.T, raw []byte, pick []byte) {
		var m Message
		if Parse(raw, &m) != nil {
			return
		}
		next := func() byte {
			if len(pick) == 0 {
				return 0
			}
			b := pick[0]
			pick = pick[1:]
			return b
		}
		var edits []Edit
		for _, s := range []Span{m.ID, m.ProgressToken, m.SubscriptionID, m.RequestID} {
			if b := next(); s.Present() && b&1 == 1 {
				edits = append(edits, Edit{Span: s, Value: spliceValues[int(b>>1)%len(spliceValues)]})
			}
		}
		if b := next(); b&1 == 1 && m.Result.Present() && raw[m.Result.Start] == '{' {
			if _, dup := Field(raw, m.Result, "inserted"); !dup {
				edits = append(edits, InsertEdit(raw, m.Result, []byte(`"inserted":[1,{"id":2}]`)))
			}
		}
		orig := bytes.Clone(raw)
		var got, want Message
		out := SpliceParsed(nil, &m, &got, edits...)
		if !bytes.Equal(raw, orig) {
			t.Fatal("SpliceParsed changed its input")
		}
		if err := Parse(out, &want); err != nil {
			t.Fatalf("%s\n-> %s: %v", raw, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\n-> %s\nSpliceParsed %+v\nParse        %+v", raw, out, got, want)
		}
	})
}

// An edit Rebased cannot account for (here inside params, which Parse
// walks) makes SpliceParsed parse the result afresh: its reading is still
// Parse's.
func TestSpliceParsedFallsBack(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	var m Message
	if err := Parse(raw, &m); err != nil {
		t.Fatal(err)
	}
	name, _ := Field(raw, m.Params, "name")
	parses := 0
	defer ObserveParses(func([]byte) { parses++ })()
	var got Message
	out := SpliceParsed(nil, &m, &got, Edit{Span: name, Value: []byte(`"bb"`)})
	if got.Name != "bb" || string(got.Raw) != string(out) || parses != 1 {
		t.Fatalf("got %+v after %d parses", got, parses)
	}
	if m.Rebased(out, &got, []Edit{{Span: name, Value: []byte(`"bb"`)}}) {
		t.Error("Rebased accepted an edit inside params")
	}
}

// WithoutSubscriptionID's parse of its result is Parse's, for any message
// Parse reads (duplicate keys, the id first, last or alone in _meta, other
// spans after it), and it leaves its input alone.
func FuzzWithoutSubscriptionID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":3}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"a":1, "io.modelcontextprotocol/subscriptionId" : "s" ,"io.modelcontextprotocol/logLevel":"info"},"uri":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"x":[1],"io.modelcontextprotocol/subscriptionId":{"k":1}},"progressToken":4,"requestId":5}}`))
	f.Add([]byte(`{"params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1,"io.modelcontextprotocol/subscriptionId":2}},"jsonrpc":"2.0","id":7,"method":"m"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n","params":{"_meta":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n","params":{"_meta":{"io.modelcontextprotocol\/subscriptionId":1,"io.modelcontextprotocol\u002fsubscriptionId":2}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m Message
		if Parse(raw, &m) != nil {
			return
		}
		orig := bytes.Clone(raw)
		var got, want Message
		out := WithoutSubscriptionID(&m, &got)
		if !bytes.Equal(raw, orig) {
			t.Fatal("WithoutSubscriptionID changed its input")
		}
		if err := Parse(out, &want); err != nil {
			t.Fatalf("%s\n-> %s: %v", raw, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\n-> %s\nWithoutSubscriptionID %+v\nParse                 %+v", raw, out, got, want)
		}
		if want.SubscriptionID.Present() {
			t.Fatalf("%s\n-> %s still names a subscription", raw, out)
		}
	})
}
