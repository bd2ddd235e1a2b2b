package wire

import (
	"strings"
	"testing"
)

func TestFilterTools(t *testing.T) {
	allowed := func(name string) bool { return !strings.HasPrefix(name, "rm") }
	parse := func(s string) *Message {
		var m Message
		if err := Parse([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	page := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"rm_rf"}, {"name":"echo","x":[1]},{"name":"rm"}],"nextCursor":"c2"}}`
	got := FilterTools(parse(page), allowed)
	if want := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"echo","x":[1]}],"nextCursor":"c2"}}`; string(got.Raw) != want {
		t.Errorf("filtered page %s, want %s", got.Raw, want)
	}
	// A page that hides nothing, and a nil filter, pass the message itself.
	for _, tc := range []struct {
		raw string
		f   func(string) bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"echo"} ]}}`, allowed},
		{page, nil},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`, allowed},
	} {
		if m := parse(tc.raw); FilterTools(m, tc.f) != m {
			t.Errorf("%s: re-encoded, want passed as it is", tc.raw)
		}
	}
	call := parse(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"rm_rf"}}`)
	if !HiddenCall(call, allowed) || HiddenCall(call, nil) || HiddenCall(parse(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`), allowed) {
		t.Error("HiddenCall: want true only for a call of a hidden tool under a filter")
	}
	if e := parse(string(HiddenCallError([]byte(`"a"`), "rm_rf"))); e.Kind != KindResponse || string(e.IDBytes()) != `"a"` || !strings.Contains(string(e.Raw), `tool \"rm_rf\" is not available`) {
		t.Errorf("HiddenCallError = %s", e.Raw)
	}
}
