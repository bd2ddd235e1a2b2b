package aggregate

import (
	"io"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// FuzzURIRouting: a rewritten URI (mcp-bridge:// or ui://) always routes
// back to its server and URI, a tool's ui:// references are rewritten into
// valid JSON, and template matching never claims more than the URI holds.
func FuzzURIRouting(f *testing.F) {
	f.Add("alpha", "file:///same", "file:///{path}")
	f.Add("a/b c%", "mcp-bridge://x/y", "{a}")
	f.Add("s", "", "x{")
	f.Add("weather", "ui://dashboard", "ui://{x}")
	f.Add("%41:b", "UI://x/%2F", `{"_meta":{"ui":{"resourceUri":"ui://x"},"ui/resourceUri":"ui://y"}}`)
	f.Fuzz(func(t *testing.T, server, uri, tmpl string) {
		if server != "" {
			s, u, ok := splitPrefixed(prefixedURI(server, uri))
			if !ok || s != server || u != uri {
				t.Fatalf("round trip of (%q, %q): (%q, %q, %v)", server, uri, s, u, ok)
			}
			if isUI(uri) {
				s, u, ok := splitUI(uiExposed(server, uri))
				if !ok || s != server || u[len(uiScheme):] != uri[len(uiScheme):] {
					t.Fatalf("ui round trip of (%q, %q): (%q, %q, %v)", server, uri, s, u, ok)
				}
			}
		}
		splitUI(uri)
		if tool := []byte(tmpl); wire.Valid(tool) {
			if out := wire.Splice(tool, uiMetaEdits(tool, server)...); !wire.Valid(out) {
				t.Fatalf("uiMetaEdits(%s) made %s", tool, out)
			}
		}
		if n := templateMatch(tmpl, uri); n > len(uri) || (n >= 0 && !strings.HasPrefix(uri, tmpl[:n])) {
			t.Fatalf("templateMatch(%q, %q) = %d", tmpl, uri, n)
		}
	})
}

// FuzzServerMessages: whatever a server writes, the client never gets an
// answer it did not ask for (every answer it sees carries its own id), and
// the session survives to deliver the server's next message.
func FuzzServerMessages(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":"2","result":{}}`,
		`{"jsonrpc":"2.0","id":2,"ID":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"_meta":{"progressToken":1}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		`[{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t\u0031","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{"message":"m","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, junk string) {
		srv := scripted(t, "s", func(p *scriptPeer) {
			if !p.initOK(`{"tools":{}}`) {
				return
			}
			m := p.read()
			for m.method != "tools/list" && !m.eof {
				m = p.read()
			}
			p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"tools":[]}}`)
			for _, line := range strings.Split(junk, "\n") {
				p.write(strings.TrimRight(line, "\r"))
			}
			p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"end-of-junk"}}`)
			p.drain()
		})
		h := newHarness(t, Config{Servers: []Server{srv}})
		c := h.raw()
		c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		for _, m := range collect(c, has("init", "end-of-junk")) {
			if _, isAnswer := m["method"]; !isAnswer && m["id"] != "init" {
				t.Fatalf("an answer the client did not ask for: %s", jsonOf(m))
			}
		}
	})
}

// FuzzClientMessages: whatever the client writes, the session goes on
// answering it, and nothing reaches the client without an id it sent
// or a method.
func FuzzClientMessages(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"final"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha_echo","_meta":{"progressToken":{}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"mcp-bridge://alpha/file:///alpha.txt"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"alpha_greet"},"argument":{"name":"a","value":""}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":null}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":\"\x01\"}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, junk string) {
		alpha, _ := twoServers()
		h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}})
		c := h.raw()
		c.initialize()
		sent := make(chan struct{})
		go func() { // the client reads while it writes, as a stdio host does
			defer close(sent)
			for _, line := range strings.Split(junk, "\n") {
				if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
					io.WriteString(c.w, line+"\n")
				}
			}
			io.WriteString(c.w, `{"jsonrpc":"2.0","id":"final-7f3a9c","method":"ping"}`+"\n")
		}()
		for {
			m := c.next()
			if m["id"] == "final-7f3a9c" && m["result"] != nil {
				<-sent
				return
			}
		}
	})
}
