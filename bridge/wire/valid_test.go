package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `1`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-05`, `1e`, `1e+`, `-01`, `0x1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`, `Infinity`,
	`""`, `"a"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"a` + "\x01" + `b"`, "\"\x7f\"", "\"\xff\xfe\"",
	`"\/\b\f\n\r\t"`, `"unterminated`,
	`{}`, `{ }`, `[]`, `[ ]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1,]`, `[,1]`, `[1 2]`,
	`[1,[2,[3,{"x":[]}]]]`, `{"a":{"b":{"c":[true,false,null]}}}`, `]`, `}`, `[}`, `{]`, `[[]`, `[]]`,
	` {"a" : [ 1 , 2 ] } `, "\t\n\r[1]\r\n", `1 2`, `{}{}`, `"a""b"`, "\u00a0" + `1`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello \"world\"\n"}]}}`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
	// Strings that cross the eight-byte steps with a special byte at every
	// offset.
	for n := 0; n < 20; n++ {
		for _, sp := range []string{`"`, `\\`, `\"`, "\x1f", "\x00", `\u0041`, "é", "\x80"} {
			s := `"` + strings.Repeat("a", n) + sp + strings.Repeat("b", 9) + `"`
			if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
			}
		}
	}
}

// encoding/json refuses more than 10,000 nested containers; so does Valid.
func TestValidNesting(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			s := []byte(strings.Repeat(open, depth) + strings.Repeat(close, depth))
			if got, want := Valid(s), json.Valid(s); got != want {
				t.Errorf("depth %d of %s: Valid %v, encoding/json %v", depth, open, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// bigResult is a 16 MiB tool result as MCP carries it: mostly one long
// string (an image's base64, a file's text), some escapes.
func bigResult() []byte {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","mimeType":"image/png","data":"`)
	chunk := strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg", 64)
	for sb.Len() < 16<<20 {
		sb.WriteString(chunk)
		sb.WriteString(`\n\"q\"`)
	}
	sb.WriteString(`"}],"isError":false}}`)
	return []byte(sb.String())
}

func BenchmarkValid(b *testing.B) {
	msg := bigResult()
	if !Valid(msg) || !json.Valid(msg) {
		b.Fatal("the message is not valid JSON")
	}
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			json.Valid(msg)
		}
	})
}

// Shifted reads an insertion into _meta as Parse does.
func FuzzShifted(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"params":{"_meta":{}},"method":"a","id":"z","jsonrpc":"2.0"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"_meta":{ "x" : [1,2] }}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m Message
		if Parse(raw, &m) != nil || !m.Meta.Present() || raw[m.Meta.Start] != '{' {
			return
		}
		if _, dup := Field(raw, m.Meta, "traceparent"); dup {
			return
		}
		out := InsertFields(raw, m.Meta, []byte(`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`))
		var want Message
		if err := Parse(out, &want); err != nil {
			return // the insertion made the message ambiguous (a traceparent spelt otherwise)
		}
		got := m.Shifted(out, m.Meta.Start+1, len(out)-len(raw))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\n-> %s\nShifted %+v\nParse   %+v", raw, out, got, want)
		}
	})
}
