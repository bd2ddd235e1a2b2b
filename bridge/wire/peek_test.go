package wire

import (
	"bytes"
	"strings"
	"testing"
)

// ends returns the first and the last n bytes of s.
func ends(s string, n int) (head, tail []byte) {
	n = min(n, len(s))
	return []byte(s[:n]), []byte(s[len(s)-n:])
}

func TestPeekEnvelope(t *testing.T) {
	big := `{"content":[{"type":"text","text":"` + strings.Repeat(`x\"},{`, 3000) + `"}],"id":99}`
	for _, tc := range []struct {
		name, msg  string
		id         string // "" for none
		resp, meth bool
	}{
		{"go and python order", `{"jsonrpc":"2.0","id":7,"result":` + big + `}`, "7", true, false},
		{"typescript order", `{"result":` + big + `,"jsonrpc":"2.0","id":7}`, "7", true, false},
		{"typescript order, spaced", "{ \"result\" : " + big + " ,\r\n \"jsonrpc\" : \"2.0\" ,\t\"id\" : \"a\\\"b\" }", `"a\"b"`, true, false},
		{"error first", `{"error":{"code":-1,"message":"` + strings.Repeat("m", 9000) + `"},"jsonrpc":"2.0","id":-3}`, "-3", true, false},
		{"id between huge members", `{"result":` + big + `,"id":7,"extra":` + big + `}`, "", true, false},
		{"only the nested id at the end", `{"jsonrpc":"2.0","result":` + big + `}`, "", true, false},
		{"a request", `{"jsonrpc":"2.0","id":"r1","method":"sampling/createMessage","params":` + big + `}`, `"r1"`, false, true},
		{"a request, params first", `{"params":` + big + `,"method":"x","jsonrpc":"2.0","id":4}`, "4", false, true},
		{"a notification", `{"method":"notifications/message","params":` + big + `,"jsonrpc":"2.0"}`, "", false, true},
		{"two ids", `{"id":1,"result":` + big + `,"id":2}`, "", false, false},
		{"an id in another case", `{"result":` + big + `,"ID":7}`, "", false, false},
		{"an escaped id key", `{"\u0069d":7,"result":` + big + `}`, "", false, false},
		{"a fractional id", `{"id":1.5,"result":` + big + `}`, "", false, false},
		{"method and result", `{"method":"x","result":` + big + `,"id":1}`, "", false, false},
		{"a batch", `[{"id":1,"result":` + big + `}]`, "", false, false},
		{"not JSON", strings.Repeat("garbage ", 2000), "", false, false},
	} {
		head, tail := ends(tc.msg, 4096)
		p := PeekEnvelope(head, tail)
		if string(p.ID) != tc.id || p.Response != tc.resp || p.Method != tc.meth {
			t.Errorf("%s: got id %q response %v method %v; want %q %v %v", tc.name, p.ID, p.Response, p.Method, tc.id, tc.resp, tc.meth)
		}
	}
}

// The tail may start anywhere: inside a run of backslashes, inside a
// string, inside a number. No cut makes it read an id that is not the
// envelope's.
func TestPeekTailCutAnywhere(t *testing.T) {
	msg := `{"result":{"t":"\\\\\"id\":5}\\"},"jsonrpc":"2.0","id":12345}`
	for n := 0; n <= len(msg); n++ {
		p := PeekEnvelope(nil, []byte(msg[len(msg)-n:]))
		if p.ID != nil && string(p.ID) != "12345" {
			t.Fatalf("tail %q: id %q", msg[len(msg)-n:], p.ID)
		}
		if want := n >= len(`,"id":12345}`); (p.ID != nil) != want {
			t.Errorf("tail %q: id %q, want found=%v", msg[len(msg)-n:], p.ID, want)
		}
	}
	for n := 0; n < len(msg); n++ {
		p := PeekEnvelope([]byte(msg[:n]), nil)
		if p.ID != nil {
			t.Fatalf("head %q: id %q from a head that ends before it", msg[:n], p.ID)
		}
		if want := n >= len(`{"result":`); p.Response != want {
			t.Errorf("head %q: response %v", msg[:n], p.Response)
		}
	}
}

// Whatever the cut, what PeekEnvelope reads agrees with Parse on the whole
// message; and a message that fits both ends is read completely.
func FuzzPeekEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"a":[1,2,"x"]}}`), 20)
	f.Add([]byte(`{"result":{"a":"\\\"}"},"jsonrpc":"2.0","id":"q\"1"}`), 15)
	f.Add([]byte(`{"method":"m","params":{},"id":null}`), 100)
	f.Add([]byte(`{"params":{"x":1},"method":"m","jsonrpc":"2.0","id":3}`), 9)
	f.Fuzz(func(t *testing.T, msg []byte, n int) {
		n = max(0, min(n, len(msg)))
		head, tail := msg[:n], msg[len(msg)-n:]
		p := PeekEnvelope(head, tail)
		var m Message
		if !Valid(msg) || Parse(msg, &m) != nil {
			return
		}
		id := m.IDBytes()
		switch {
		case p.ID != nil && !bytes.Equal(p.ID, id) && !(m.Kind == KindNotification && string(p.ID) == "null"):
			t.Fatalf("id %q, Parse reads %q", p.ID, id)
		case p.Response && m.Kind != KindResponse:
			t.Fatalf("taken for a response: %v", m.Kind)
		case p.Method && m.Kind == KindResponse:
			t.Fatalf("taken for a request: %v", m.Kind)
		}
		if n == len(msg) && (m.Kind == KindResponse || m.Kind == KindRequest) {
			if !bytes.Equal(p.ID, id) || p.Response != (m.Kind == KindResponse) || p.Method != (m.Kind == KindRequest) {
				t.Fatalf("whole message: %+v, Parse: kind %v id %q", p, m.Kind, id)
			}
		}
	})
}
