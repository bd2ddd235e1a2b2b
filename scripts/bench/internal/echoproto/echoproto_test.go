package echoproto

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestAnswers(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, `supportedVersions`},
		{`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, `"protocolVersion":"2025-06-18"`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `"name":"echo"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"size":5}}}`, `"text":"abcde"`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`, `-32602`},
		{`{"jsonrpc":"2.0","id":5,"method":"nope"}`, `-32601`},
	}
	for _, c := range cases {
		var r Request
		if err := r.Parse([]byte(c.in)); err != nil {
			t.Fatal(err)
		}
		out, ok := r.Answer(nil)
		if !ok || !json.Valid(out) || !contains(out, c.want) {
			t.Errorf("%s -> %s (want %s)", c.in, out, c.want)
		}
	}
	var r Request
	r.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if _, ok := r.Answer(nil); ok {
		t.Error("answered a notification")
	}
	r.Parse([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"size":100000,"progress":2},"_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	head, tail := r.EchoParts(nil)
	if full := append(head, tail...); !json.Valid(full) || len(full) < 100000 || !contains(full, `"resultType":"complete"`) {
		t.Errorf("large modern echo: %d bytes, valid=%v", len(full), json.Valid(full))
	}
	if p := r.Progress(nil, 1); !json.Valid(p) || !contains(p, `"progressToken":"t"`) {
		t.Errorf("progress %s", p)
	}
}

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
