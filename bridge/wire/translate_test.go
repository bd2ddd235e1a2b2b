package wire

import (
	"encoding/json"
	"testing"
)

func TestTranslateEdits(t *testing.T) {
	complete := func(method string) func(m *Message) []byte {
		return func(m *Message) []byte {
			if e, ok := CompleteResultEdit(m, method); ok {
				return Splice(m.Raw, e)
			}
			return m.Raw
		}
	}
	meta := []byte(`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`)
	tests := []struct {
		name string
		in   string
		edit func(m *Message) []byte
		want string
	}{
		{"meta into no params", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, func(m *Message) []byte { return WithMetaFields(m, meta) },
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"meta into empty params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, func(m *Message) []byte { return WithMetaFields(m, meta) },
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"meta into params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, func(m *Message) []byte { return WithMetaFields(m, meta) },
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}}`},
		{"meta into _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":5}}}`, func(m *Message) []byte { return WithMetaFields(m, meta) },
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":5}}}`},
		{"drop fields", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"ttlMs":0, "cacheScope":"public"}}`, func(m *Message) []byte { return WithoutFields(m.Raw, m.Result, "resultType", "ttlMs", "cacheScope") },
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{"complete a cacheable result", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, complete("tools/list"),
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}}`},
		{"complete an empty result", `{"jsonrpc":"2.0","id":1,"result":{}}`, complete("tools/call"),
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`},
		{"complete only what is missing", `{"jsonrpc":"2.0","id":1,"result":{"ttlMs":5,"contents":[]}}`, complete("resources/read"),
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","cacheScope":"private","ttlMs":5,"contents":[]}}`},
		{"complete a complete result", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`, complete("tools/call"),
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`},
		{"complete an error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, complete("tools/list"),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`},
		{"drop a middle field", `{"jsonrpc":"2.0","id":1,"result":{"a":1, "ttlMs":0 ,"b":{"ttlMs":2}}}`, func(m *Message) []byte { return WithoutFields(m.Raw, m.Result, "ttlMs") },
			`{"jsonrpc":"2.0","id":1,"result":{"a":1, "b":{"ttlMs":2}}}`},
		{"drop every field", `{"jsonrpc":"2.0","id":1,"result":{ "ttlMs":0,"resultType":"complete" }}`, func(m *Message) []byte { return WithoutFields(m.Raw, m.Result, "resultType", "ttlMs") },
			`{"jsonrpc":"2.0","id":1,"result":{ }}`},
		{"drop an escaped key", `{"jsonrpc":"2.0","id":1,"result":{"a\"b" : 1,"c":2}}`, func(m *Message) []byte { return WithoutFields(m.Raw, m.Result, `a\"b`) },
			`{"jsonrpc":"2.0","id":1,"result":{"c":2}}`},
		{"drop nothing", `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`, func(m *Message) []byte { return WithoutFields(m.Raw, m.Result, "b") },
			`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`},
	}
	for _, tt := range tests {
		var m Message
		if err := Parse([]byte(tt.in), &m); err != nil {
			t.Fatal(err)
		}
		got := tt.edit(&m)
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	var m Message
	Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}}}}}}`), &m)
	c := m.ClientCapabilities()
	if !c.Allows("sampling/createMessage") || !c.Allows("elicitation/create") || c.Allows("roots/list") {
		t.Errorf("capabilities %+v", c)
	}
}
