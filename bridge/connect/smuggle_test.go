package connect

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Issue 8, smuggled routing keys, host side: a line whose routed keys are
// duplicated, escaped or case variants gets an Invalid Request error
// instead of being taken for something else (a notification, another
// method), and the next line works.
func TestSmuggledHostLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, readBody(r), `{"resultType":"complete","content":[]}`)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	for i, line := range []string{
		`{"jsonrpc":"2.0","\u0069d":5,"method":"tools/call","params":{"name":"x",` + meta + `}}`,
		`{"jsonrpc":"2.0","ID":5,"method":"tools/call","params":{"name":"x",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call","params":{"name":"x",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call","params":{"name":"x",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","n\u0061me":"y",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1,"progress\u0054oken":2,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"request\u0049d":2}}`,
	} {
		h.send(line)
		m := h.next(10 * time.Second)
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(wire.CodeInvalidRequest) || m["id"] != nil {
			t.Errorf("%s: got %v, want an Invalid Request error with id null", line, m)
		}
		id := fmt.Sprintf(`"after-%d"`, i)
		h.send(modernCall(id, "x"))
		if resp, others := h.response(id, 10*time.Second); resp["result"] == nil || len(others) != 0 {
			t.Errorf("the line after %s: %v (+%v)", line, resp, others)
		}
	}
}

// Issue 8, smuggled routing keys, remote side: a remote that answers one
// request with a message whose id or progress token a decoder reads as
// another request's never gets that message to the host; the other
// request still gets its own answer, once.
func TestSmuggledRemoteMessages(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		switch m.Name {
		case "victim":
			<-release
			answer(w, r, body, `{"resultType":"complete","content":[],"mine":true}`)
		case "attacker":
			defer close(release)
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a","progress\u0054oken":"v","progress":1,"smuggled":1}}`,
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a","progressToken":"v","progress":1,"smuggled":2}}`,
				`{"jsonrpc":"2.0","id":"a","ID":"v","result":{"resultType":"complete","smuggled":3}}`,
				`{"jsonrpc":"2.0","id":"a","i\u0064":"v","result":{"resultType":"complete","smuggled":4}}`,
				`{"jsonrpc":"2.0","id":"a","id":"v","result":{"resultType":"complete","smuggled":5}}`,
			} {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", ev)
			}
		default:
			answer(w, r, body, `{"resultType":"complete","content":[]}`)
		}
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	call := func(id, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{},"_meta":{"progressToken":%q,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, tool, id)
	}
	h.send(call("v", "victim"))
	h.send(call("a", "attacker"))
	answers := map[string]int{}
	for answers[`"v"`] == 0 || answers[`"a"`] == 0 {
		m := h.next(20 * time.Second)
		b, _ := json.Marshal(m)
		if strings.Contains(string(b), "smuggled") {
			t.Errorf("the host received a smuggled message: %s", b)
		}
		if m["method"] != nil {
			t.Errorf("unexpected notification: %s", b)
			continue
		}
		id, _ := json.Marshal(m["id"])
		answers[string(id)]++
		if string(id) == `"v"` && dig(m, "result", "mine") != true {
			t.Errorf("the victim's answer is not its own: %s", b)
		}
	}
	h.expectNothing(200 * time.Millisecond)
	if answers[`"v"`] != 1 || answers[`"a"`] != 1 || len(answers) != 2 {
		t.Errorf("answers %v, want one each for \"v\" and \"a\"", answers)
	}
}
