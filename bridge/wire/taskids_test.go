package wire

import (
	"encoding/json"
	"slices"
	"testing"
)

// Every place either generation puts a task id is renamed; nothing else
// is, and a message without one comes back as it was.
func TestRewriteTaskIDs(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"a"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"X-a"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"a","status":"working"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"X-a","status":"working"}}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"a"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"X-a"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"a"},{"taskId":7},{"taskId":"b"}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"X-a"},{"taskId":7},{"taskId":"X-b"}]}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["a","b"]}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["X-a","X-b"]}}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"a"}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"X-a"}}}}`},
		{`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"a","status":"cancelled"}}`,
			`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"X-a","status":"cancelled"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"taskId"}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"taskId"}]}}`},
	}
	for _, c := range cases {
		var m Message
		if err := Parse([]byte(c.in), &m); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := RewriteTaskIDs(&m, func(id string) string { return "X-" + id }); string(got) != c.want {
			t.Errorf("RewriteTaskIDs(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// FuzzRewriteTaskIDs: whatever a peer sends, the renamed message is valid
// JSON, and renaming back gives the message again.
func FuzzRewriteTaskIDs(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"a"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"notifications":{"taskIds":["a",1]},"task":{"taskId":"\u0061"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"taskId":"a","taskId":"b"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m Message
		if !Valid([]byte(s)) || Parse([]byte(s), &m) != nil {
			return
		}
		var seen []string
		out := RewriteTaskIDs(&m, func(id string) string { seen = append(seen, id); return "p/" + id })
		if !json.Valid(out) {
			t.Fatalf("invalid after rewrite: %s -> %s", s, out)
		}
		var back Message
		if err := Parse(out, &back); err != nil {
			t.Fatalf("unparsable after rewrite: %s -> %s: %v", s, out, err)
		}
		var again []string
		RewriteTaskIDs(&back, func(id string) string { again = append(again, id[2:]); return id[2:] })
		slices.Sort(seen)
		slices.Sort(again)
		if !slices.Equal(seen, again) {
			t.Fatalf("ids %q, after the rewrite %q: %s -> %s", seen, again, s, out)
		}
	})
}
