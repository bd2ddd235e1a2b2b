package hostio

import (
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
		{`{"method":"m","params":{"x":"` + long + `"},"jsonrpc":"2.0","id":-75}`, "-75"},
		{`{"method":"m","params":{"x":"` + long + `"},"jsonrpc":"2.0","id":"q\\"}  `, `"q\\"`},
		{`{"method":"m","params":{"x":"` + long + `"},"id":"a\"id\":5"}`, `"a\"id\":5"`},
		// not a request, or no id to be read
		{`{"jsonrpc":"2.0","id":1,"result":{"x":"` + long + `"}}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"` + long + `"}}`, ""},
		{`{"method":"m","params":{"x":"` + long + `","id":3}}`, ""},
		// a null id is answered under null: the null-id error it always got
		{`{"method":"m","params":{"x":"` + long + `"},"id":null}`, "null"},
		{`{"id":1,"id":2,"method":"m","params":{"x":"` + long + `"}}`, ""},
		{`{"id":{"a":1},"method":"m","params":{"x":"` + long + `"}}`, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"` + long + `"}}]`, ""},
		{`not json ` + long, ""},
	} {
		tl := &lineio.TooLongError{Head: []byte(tc.line[:min(len(tc.line), lineio.PeekSize)]), Tail: []byte(tc.line[max(0, len(tc.line)-lineio.PeekSize):])}
		if got := string(skippedID(tl)); got != tc.want {
			t.Errorf("%.50q...%q: id %q, want %q", tc.line, tc.line[max(0, len(tc.line)-30):], got, tc.want)
		}
	}
}
