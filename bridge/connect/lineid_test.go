package connect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/lineio"
)

func TestSkippedID(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		line string
		want string // "" for nil
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"` + long + `"}}`, "1"},
		{` { "jsonrpc" : "2.0" , "id" : "a\"b" , "method":"m","params":{"x":"` + long + `"}}`, `"a\"b"`},
		{`{"method":"m","params":{"x":"` + long + `"},"jsonrpc":"2.0","id":-7.5e3}`, "-7.5e3"},
		{`{"method":"m","params":{"x":"` + long + `"},"jsonrpc":"2.0","id":"q\\"}  `, `"q\\"`},
		{`{"method":"m","params":{"x":"` + long + `"},"id":"a\"id\":5"}`, `"a\"id\":5"`},
		// not a request, or no id to be read
		{`{"jsonrpc":"2.0","id":1,"result":{"x":"` + long + `"}}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"` + long + `"}}`, ""},
		{`{"method":"m","params":{"x":"` + long + `","id":3}}`, ""},
		{`{"method":"m","params":{"x":"` + long + `"},"id":null}`, ""},
		{`{"id":1,"id":2,"method":"m","params":{"x":"` + long + `"}}`, ""},
		{`{"id":{"a":1},"method":"m","params":{"x":"` + long + `"}}`, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"` + long + `"}}]`, ""},
		{`not json ` + long, ""},
	} {
		tl := &lineio.TooLongError{Head: []byte(tc.line[:min(len(tc.line), lineio.HeadSize)]), Tail: []byte(tc.line[max(0, len(tc.line)-lineio.HeadSize):])}
		if got := string(skippedID(tl)); got != tc.want {
			t.Errorf("%.50q...%q: id %q, want %q", tc.line, tc.line[max(0, len(tc.line)-30):], got, tc.want)
		}
	}
}

// FuzzSkippedID: whatever the head and tail, an id found is one JSON
// string or number.
func FuzzSkippedID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{`), []byte(`"}}`))
	f.Add([]byte(`{"method":"m","params":{"x":"`), []byte(`xx"},"jsonrpc":"2.0","id":"a\"b"}`))
	f.Add([]byte(`{"method":"m"`), []byte(`,"id":-1e3 }`))
	f.Fuzz(func(t *testing.T, head, tail []byte) {
		id := skippedID(&lineio.TooLongError{Head: head, Tail: tail})
		if id == nil {
			return
		}
		var v any
		if err := json.Unmarshal(id, &v); err != nil {
			t.Fatalf("id %q is no JSON value: %v", id, err)
		}
		switch v.(type) {
		case string, float64:
		default:
			t.Fatalf("id %q is neither a string nor a number", id)
		}
	})
}
