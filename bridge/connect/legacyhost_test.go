package connect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// rawModern is a hand-rolled 2026-07-28-only server: it refuses legacy
// traffic the way an SDK does (400, supported versions), answers
// server/discover, drives two input_required rounds on tools/call "ask",
// and keeps subscriptions/listen streams open, sending list_changed when
// told.
type rawModern struct {
	rec    recorder
	change chan string // notification methods to send on listen streams
}

const rawDiscover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"instructions":"be nice","ttlMs":1000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-modern","version":"9"}}}`

func (s *rawModern) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body := readBody(r)
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	s.rec.add(&m, body, r.Header)
	if !m.IsModern() || r.Header.Get("MCP-Protocol-Version") != m.ProtocolVersion || r.Header.Get("Mcp-Method") != m.Method {
		jsonErr(w, http.StatusBadRequest, m.IDBytes(), wire.CodeUnsupportedVersion, "Unsupported protocol version", `{"supported":["2026-07-28"]}`)
		return
	}
	switch m.Method {
	case "server/discover":
		answer(w, r, body, rawDiscover)
	case "tools/list":
		answer(w, r, body, `{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		s.call(w, r, &m)
	case "subscriptions/listen":
		sseStart(w)
		id := string(m.IDBytes())
		sseSend(w, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`},"notifications":{"toolsListChanged":true}}}`)
		for {
			select {
			case method := <-s.change:
				sseSend(w, `{"jsonrpc":"2.0","method":"`+method+`","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`}}}`)
			case <-r.Context().Done():
				return
			}
		}
	default:
		jsonErr(w, http.StatusNotFound, m.IDBytes(), wire.CodeMethodNotFound, "Method not found", "")
	}
}

// call: round 1 asks for an elicitation (after a progress notification),
// round 2 for a sampling, round 3 answers. The requestState has an escape
// sequence, which must come back byte for byte.
func (s *rawModern) call(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	id := string(m.IDBytes())
	sseStart(w)
	if m.ProgressToken.Present() {
		sseSend(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+string(m.Bytes(m.ProgressToken))+`,"progress":1}}`)
	}
	state, _ := wire.Field(m.Raw, m.Params, "requestState")
	switch string(m.Bytes(state)) {
	case "":
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object"}}}},"requestState":"st\u0041te-1"}}`)
	case `"st\u0041te-1"`:
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"input_required","inputRequests":{"llm":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}},"dir":{"method":"roots/list"}},"requestState":"state-2"}}`)
	default:
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}]}}`)
	}
}

func TestTranslateLegacyHostRaw(t *testing.T) {
	rm := &rawModern{change: make(chan string, 4)}
	srv := httptest.NewServer(rm)
	t.Cleanup(srv.Close) // after the host's cleanup: the listen stream holds a connection
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolModern})

	// initialize is answered from server/discover.
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"lh","version":"1"}}}`)
	init, _ := h.response("0", 10*time.Second)
	res, _ := init["result"].(map[string]any)
	if res["protocolVersion"] != "2025-06-18" || dig(res, "serverInfo", "name") != "raw-modern" || res["instructions"] != "be nice" ||
		dig(res, "capabilities", "tools", "listChanged") != true {
		t.Fatalf("initialize result %v", init)
	}
	if len(rm.rec.of("initialize")) != 0 {
		t.Error("a pinned modern remote got the legacy initialize")
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	listen := rm.rec.wait(t, "subscriptions/listen", 1)[0]
	if f := dig(obj(t, listen.body), "params", "notifications"); jsonText(f) != `{"toolsListChanged":true}` {
		t.Errorf("listen filter %v, want what the remote advertises", f)
	}

	// Requests carry the envelope; results lose the modern-only fields.
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list, _ := h.response("1", 10*time.Second)
	if r := list["result"].(map[string]any); r["resultType"] != nil || r["ttlMs"] != nil || r["cacheScope"] != nil || r["tools"] == nil {
		t.Errorf("tools/list result %v", r)
	}
	got := rm.rec.of("tools/list")[0]
	meta := dig(obj(t, got.body), "params", "_meta").(map[string]any)
	if meta[wire.MetaProtocolVersion] != "2026-07-28" || jsonText(meta[wire.MetaClientCapabilities]) != `{"elicitation":{},"sampling":{}}` ||
		dig(meta, wire.MetaClientInfo, "name") != "lh" || meta[wire.MetaLogLevel] != nil {
		t.Errorf("envelope %v", meta)
	}

	// Removed methods are answered here.
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"info"}}`)
	for range 2 { // answered concurrently, in either order
		if r := h.next(5 * time.Second); jsonText(r["result"]) != `{}` || (r["id"] != float64(2) && r["id"] != float64(3)) {
			t.Errorf("ping or setLevel: %v", r)
		}
	}

	// input_required becomes requests to the host; its answers go back in
	// a retry with a new id and the requestState byte for byte.
	h.send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"progressToken":7}}}`)
	elicit, others := h.until(10*time.Second, "elicitation/create", func(m map[string]any) bool { return m["method"] == "elicitation/create" })
	if len(others) != 1 || others[0]["method"] != "notifications/progress" {
		t.Errorf("before the elicitation: %v, want the progress notification", others)
	}
	if !hasPrefix(elicit["id"], "mcp-bridge-input-") || dig(elicit, "params", "message") != "Name?" {
		t.Fatalf("elicitation %v", elicit)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"name":"octocat"}}}`, elicit["id"]))
	// The second round asks for sampling and roots; the host declared no
	// roots capability, so only the sampling request reaches it.
	sample, _ := h.until(10*time.Second, "sampling/createMessage", func(m map[string]any) bool { return m["method"] != "notifications/progress" })
	if sample["method"] != "sampling/createMessage" {
		t.Fatalf("got %v, want the sampling request", sample)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`, sample["id"]))
	final, _ := h.until(10*time.Second, "the call's result", func(m map[string]any) bool { return m["id"] == "c1" })
	if r := final["result"].(map[string]any); r["resultType"] != nil || dig(r, "content") == nil {
		t.Errorf("final %v", final)
	}
	calls := rm.rec.wait(t, "tools/call", 3)
	ids := map[string]bool{}
	for i, c := range calls {
		m := obj(t, c.body)
		ids[jsonText(m["id"])] = true
		if dig(m, "params", "_meta", "progressToken") != float64(7) || dig(m, "params", "_meta", wire.MetaLogLevel) != "info" {
			t.Errorf("call %d lost its progress token or log level: %s", i, c.body)
		}
		if c.header.Get("Mcp-Name") != "ask" {
			t.Errorf("call %d: Mcp-Name %q", i, c.header.Get("Mcp-Name"))
		}
	}
	if len(ids) != 3 {
		t.Errorf("the retries reused an id: %v", ids)
	}
	if !strings.Contains(calls[1].body, `"requestState":"st\u0041te-1"`) || !strings.Contains(calls[1].body, `"inputResponses":{"who":{"action":"accept","content":{"name":"octocat"}}}`) {
		t.Errorf("first retry %s", calls[1].body)
	}
	if !strings.Contains(calls[2].body, `"requestState":"state-2"`) || !strings.Contains(calls[2].body, `"llm":{"role":"assistant"`) || strings.Contains(calls[2].body, `"dir"`) {
		t.Errorf("second retry %s", calls[2].body)
	}

	// A subscription re-opens the listen stream with the URI.
	h.send(`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
	if r, _ := h.response("4", 5*time.Second); jsonText(r["result"]) != `{}` {
		t.Errorf("subscribe: %v", r)
	}
	l2 := rm.rec.wait(t, "subscriptions/listen", 2)[1]
	if f := dig(obj(t, l2.body), "params", "notifications", "resourceSubscriptions"); jsonText(f) != `["file:///a"]` {
		t.Errorf("listen after subscribe: %s", l2.body)
	}
	// Listen notifications reach the host as plain legacy ones.
	rm.change <- "notifications/tools/list_changed"
	n, _ := h.until(10*time.Second, "list_changed", func(m map[string]any) bool { return m["method"] != nil })
	if n["method"] != "notifications/tools/list_changed" || dig(n, "params", "_meta", wire.MetaSubscriptionID) != nil {
		t.Errorf("notification %v, want list_changed without the subscription id", n)
	}
	for _, method := range []string{"ping", "logging/setLevel", "resources/subscribe", "notifications/initialized"} {
		if len(rm.rec.of(method)) != 0 {
			t.Errorf("%s reached the modern remote", method)
		}
	}
}

// A host that cancels a call while the bridge waits for its input: the
// bridge withdraws its request to the host and closes the remote's stream.
func TestTranslateLegacyHostCancelDuringInput(t *testing.T) {
	rm := &rawModern{change: make(chan string)}
	srv := httptest.NewServer(rm)
	t.Cleanup(srv.Close) // after the host's cleanup: the listen stream holds a connection
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolModern})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"lh","version":"1"}}}`)
	h.response("0", 10*time.Second)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	elicit, _ := h.until(10*time.Second, "elicitation/create", func(m map[string]any) bool { return m["method"] == "elicitation/create" })
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	c, _ := h.until(10*time.Second, "the withdrawn request", func(m map[string]any) bool { return m["method"] == "notifications/cancelled" })
	if dig(c, "params", "requestId") != elicit["id"] {
		t.Errorf("cancelled %v, want requestId %v", c, elicit["id"])
	}
	// A late answer is swallowed, and the call gets no response.
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"cancel"}}`, elicit["id"]))
	h.expectNothing(300 * time.Millisecond)
	if n := len(rm.rec.of("tools/call")); n != 1 {
		t.Errorf("%d tools/call at the remote, want 1", n)
	}
	if n := len(rm.rec.of("(response)")); n != 0 {
		t.Errorf("a host response reached the remote")
	}
}

// Input the host cannot give (no capability declared) fails the call
// instead of retrying in vain.
func TestTranslateLegacyHostUndeclaredInput(t *testing.T) {
	rm := &rawModern{change: make(chan string)}
	srv := httptest.NewServer(rm)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolModern})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lh","version":"1"}}}`)
	h.response("0", 10*time.Second)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	r, others := h.response("1", 10*time.Second)
	if !contains(errorMessage(r), "elicitation/create: capability not declared") || len(others) != 0 {
		t.Errorf("got %v (after %v), want an error naming the missing capability and no request to the host", r, others)
	}
	if n := len(rm.rec.of("tools/call")); n != 1 {
		t.Errorf("%d tools/call at the remote, want 1", n)
	}
}
