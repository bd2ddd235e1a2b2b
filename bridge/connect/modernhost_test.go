package connect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// rawLegacy is a hand-rolled 2025-11-25-only server with a session and a
// GET stream. It refuses modern requests the way a stateful Go SDK server
// does (400, -32022 listing 2025 versions). Tools:
//
//   - ask: asks for an elicitation on the call's stream, pings, answers
//     with what the elicitation returned;
//   - sampleget: asks for sampling on the GET stream (as mcp-go does);
//   - nocap: asks for sampling on the call's stream and reports the answer;
//   - slow: never answers;
//   - getanswer: answers on the GET stream, keeping the call's stream open;
//   - rootsget: sends roots/list on the GET stream (as server-everything
//     does at start, unrelated to any call) and answers with the answer;
//   - askroots: asks roots/list on the call's stream.
type rawLegacy struct {
	rec     recorder
	get     chan string // messages for the GET stream
	mu      sync.Mutex
	waiters map[string]chan string // server request id -> the client's response
	gets    int
	deletes int
	slow    chan struct{} // closed when a slow call's stream was closed
	gotAns  chan struct{} // closed when a getanswer call's stream was closed
	rootsN  int           // roots/list requests sent
}

// nextRootsID numbers the remote's roots/list requests.
func (s *rawLegacy) nextRootsID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rootsN++
	return strconv.Itoa(400 + s.rootsN)
}

func newRawLegacy() *rawLegacy {
	return &rawLegacy{get: make(chan string, 8), waiters: map[string]chan string{}, slow: make(chan struct{}), gotAns: make(chan struct{})}
}

const legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true},"logging":{}},"serverInfo":{"name":"raw-legacy","version":"3"},"instructions":"hi"}`

// await waits for the client's response to server request id, or for the
// request's end.
func (s *rawLegacy) await(r *http.Request, id string) (string, bool) {
	select {
	case resp := <-s.waiter(id):
		return resp, true
	case <-r.Context().Done():
		return "", false
	}
}

func (s *rawLegacy) waiter(id string) chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.waiters[id]
	if !ok {
		ch = make(chan string, 1)
		s.waiters[id] = ch
	}
	return ch
}

func (s *rawLegacy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		s.mu.Lock()
		s.deletes++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		if r.Header.Get("Mcp-Session-Id") != "sess-1" {
			http.Error(w, "no session", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.gets++
		s.mu.Unlock()
		sseStart(w)
		for {
			select {
			case msg := <-s.get:
				sseSend(w, msg)
			case <-r.Context().Done():
				return
			}
		}
	}
	body := readBody(r)
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	s.rec.add(&m, body, r.Header)
	if m.IsModern() {
		jsonErr(w, http.StatusBadRequest, m.IDBytes(), wire.CodeUnsupportedVersion, "protocol version not supported", `{"supported":["2025-11-25","2025-06-18"],"requested":"2026-07-28"}`)
		return
	}
	if m.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "sess-1")
		answer(w, r, body, legacyInit)
		return
	}
	if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("MCP-Protocol-Version") != "2025-11-25" {
		http.Error(w, "bad session or version", http.StatusBadRequest)
		return
	}
	switch m.Kind {
	case wire.KindResponse:
		s.waiter(string(m.IDBytes())) <- string(body)
		w.WriteHeader(http.StatusAccepted)
		return
	case wire.KindNotification:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	id := string(m.IDBytes())
	switch {
	case m.Method == "tools/list":
		answer(w, r, body, `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)
	case m.Method == "tools/call" && m.Name == "ask":
		sseStart(w)
		sseSend(w, `{"jsonrpc":"2.0","id":100,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}`)
		elicited, ok := s.await(r, "100")
		if !ok {
			return
		}
		sseSend(w, `{"jsonrpc":"2.0","id":101,"method":"ping"}`)
		pong, ok := s.await(r, "101")
		if !ok {
			return
		}
		var e wire.Message
		wire.Parse([]byte(elicited), &e)
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":`+string(wire.AppendString(nil, string(e.Bytes(e.Result))))+`}],"pong":`+pong+`}}`)
	case m.Method == "tools/call" && m.Name == "sampleget":
		s.get <- `{"jsonrpc":"2.0","id":200,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":3}}`
		resp, ok := s.await(r, "200")
		if !ok {
			return
		}
		answer(w, r, body, `{"content":[{"type":"text","text":"got it"}],"sampled":`+resp+`}`)
	case m.Method == "tools/call" && m.Name == "nocap":
		sseStart(w)
		sseSend(w, `{"jsonrpc":"2.0","id":300,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":3}}`)
		sseSend(w, `{"jsonrpc":"2.0","id":301,"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object"}}}`)
		a, _ := s.await(r, "300")
		b, _ := s.await(r, "301")
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"sampling":`+a+`,"elicitation":`+b+`}}`)
	case m.Method == "tools/call" && m.Name == "rootsget":
		rid := s.nextRootsID()
		s.get <- `{"jsonrpc":"2.0","id":` + rid + `,"method":"roots/list"}`
		resp, ok := s.await(r, rid)
		if !ok {
			return
		}
		answer(w, r, body, `{"content":[],"roots":`+resp+`}`)
	case m.Method == "tools/call" && m.Name == "askroots":
		rid := s.nextRootsID()
		sseStart(w)
		sseSend(w, `{"jsonrpc":"2.0","id":`+rid+`,"method":"roots/list"}`)
		resp, ok := s.await(r, rid)
		if !ok {
			return
		}
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"roots":`+resp+`}}`)
	case m.Method == "tools/call" && m.Name == "slow":
		sseStart(w)
		<-r.Context().Done()
		close(s.slow)
	case m.Method == "tools/call" && m.Name == "getanswer":
		sseStart(w)
		s.get <- `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[],"via":"get"}}`
		<-r.Context().Done()
		close(s.gotAns)
	default:
		answer(w, r, body, `{}`)
	}
}

func TestTranslateModernHostRaw(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
	h := startHost(t, Config{URL: srv.URL})
	envelope := func(caps string) string {
		return `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"mh","version":"1"}`
	}

	// server/discover is refused like a stateful Go SDK server refuses it:
	// the bridge opens a legacy session and answers from its InitializeResult.
	h.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + envelope(`{"elicitation":{}}`) + `}}}`)
	disc, _ := h.response("1", 10*time.Second)
	want := `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true},"logging":{}},"instructions":"hi","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-legacy","version":"3"}}}`
	if got := jsonText(disc["result"]); got != jsonText(obj(t, want)) {
		t.Errorf("discover result\n got %s\nwant %s", got, want)
	}
	init := obj(t, rl.rec.wait(t, "initialize", 1)[0].body)
	if dig(init, "params", "protocolVersion") != "2025-11-25" || jsonText(dig(init, "params", "capabilities")) != `{"elicitation":{}}` ||
		dig(init, "params", "clientInfo", "name") != "mh" {
		t.Errorf("initialize %v", init)
	}
	rl.rec.wait(t, "notifications/initialized", 1)

	// Requests lose the envelope (not the progress token), get minted ids;
	// results get resultType and caching hints.
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":"p",` + envelope(`{}`) + `}}}`)
	list, _ := h.response("2", 10*time.Second)
	if r := list["result"].(map[string]any); r["resultType"] != "complete" || r["ttlMs"] != float64(0) || r["cacheScope"] != "private" || r["tools"] == nil {
		t.Errorf("tools/list result %v", r)
	}
	sent := rl.rec.of("tools/list")[0]
	if m := obj(t, sent.body); !hasPrefix(m["id"], "mcp-bridge-") || jsonText(dig(m, "params", "_meta")) != `{"progressToken":"p"}` {
		t.Errorf("forwarded %s", sent.body)
	}

	// A server request on the call's stream becomes input_required; the
	// retry's answer goes to the remote, the result to the retry.
	h.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{` + envelope(`{"elicitation":{}}`) + `}}}`)
	ir, _ := h.response("10", 10*time.Second)
	res := ir["result"].(map[string]any)
	req := dig(res, "inputRequests", "input-1")
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || dig(req.(map[string]any), "method") != "elicitation/create" || dig(req.(map[string]any), "params", "message") != "Name?" || state == "" {
		t.Fatalf("input_required result %v", res)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ask","arguments":{},"inputResponses":{"input-1":{"action":"accept","content":{"name":"octocat"}}},"requestState":%q,"_meta":{%s}}}`, state, envelope(`{"elicitation":{}}`)))
	final, _ := h.response("11", 10*time.Second)
	fr := final["result"].(map[string]any)
	if fr["resultType"] != "complete" || !strings.Contains(jsonText(fr["content"]), `octocat`) || jsonText(fr["pong"]) != jsonText(obj(t, `{"jsonrpc":"2.0","id":101,"result":{}}`)) {
		t.Errorf("final result %v", final)
	}
	if n := len(rl.rec.of("tools/call")); n != 1 {
		t.Errorf("the remote got %d tools/call, want 1 (the retry continues the call)", n)
	}

	// Without the capability, the bridge answers the remote itself.
	h.send(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nocap","arguments":{},"_meta":{` + envelope(`{}`) + `}}}`)
	nc, _ := h.response("12", 10*time.Second)
	if s := jsonText(nc["result"]); !strings.Contains(s, `client does not support sampling`) || !strings.Contains(s, `{"action":"decline"}`) {
		t.Errorf("nocap result %s", s)
	}

	// Listen: acknowledged with the honoured subset first, then only the
	// requested kinds, tagged with the subscription id.
	h.send(`{"jsonrpc":"2.0","id":20,"method":"subscriptions/listen","params":{"_meta":{` + envelope(`{}`) + `},"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///a"]}}}`)
	ack := h.next(10 * time.Second)
	if ack["method"] != "notifications/subscriptions/acknowledged" || dig(ack, "params", "_meta", wire.MetaSubscriptionID) != float64(20) ||
		jsonText(dig(ack, "params", "notifications")) != `{"resourceSubscriptions":["file:///a"],"toolsListChanged":true}` {
		t.Fatalf("acknowledgement %v", ack)
	}
	if sub := rl.rec.of("resources/subscribe"); len(sub) != 1 || !strings.Contains(sub[0].body, `"uri":"file:///a"`) {
		t.Errorf("resources/subscribe at the remote: %v", sub)
	}
	for _, n := range []string{
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///b"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`,
	} {
		rl.get <- n
	}
	n1, n2 := h.next(10*time.Second), h.next(10*time.Second)
	if n1["method"] != "notifications/tools/list_changed" || dig(n1, "params", "_meta", wire.MetaSubscriptionID) != float64(20) ||
		n2["method"] != "notifications/resources/updated" || dig(n2, "params", "uri") != "file:///a" || dig(n2, "params", "_meta", wire.MetaSubscriptionID) != float64(20) {
		t.Errorf("listen notifications %v, %v", n1, n2)
	}

	// A request on the GET stream goes to the call in flight.
	h.send(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"sampleget","arguments":{},"_meta":{` + envelope(`{"sampling":{}}`) + `}}}`)
	ir, _ = h.response("13", 10*time.Second)
	res = ir["result"].(map[string]any)
	if dig(res, "inputRequests", "input-1", "method") != "sampling/createMessage" {
		t.Fatalf("sampleget: %v", ir)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"sampleget","arguments":{},"inputResponses":{"input-1":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}},"requestState":%q,"_meta":{%s}}}`, res["requestState"], envelope(`{"sampling":{}}`)))
	final, _ = h.response("14", 10*time.Second)
	if !strings.Contains(jsonText(final["result"]), `"model":"m"`) {
		t.Errorf("sampleget final %v", final)
	}

	// A stale requestState is an error, not a new call.
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"sampleget","arguments":{},"inputResponses":{},"requestState":%q,"_meta":{%s}}}`, state, envelope(`{}`)))
	if r, _ := h.response("15", 10*time.Second); !strings.Contains(errorMessage(r), "requestState") {
		t.Errorf("stale requestState: %v", r)
	}

	// Cancelling a call tells the remote, under the id it knows.
	h.send(`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{` + envelope(`{}`) + `}}}`)
	slow := obj(t, rl.rec.wait(t, "tools/call", 4)[3].body)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":16}}`)
	c := obj(t, rl.rec.wait(t, "notifications/cancelled", 1)[0].body)
	if dig(c, "params", "requestId") != slow["id"] {
		t.Errorf("cancellation %v for a call sent as %v", c, slow["id"])
	}
	select {
	case <-rl.slow:
	case <-time.After(10 * time.Second):
		t.Error("the cancelled call's stream stayed open")
	}

	// Cancelling the listen unsubscribes the remote.
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":20}}`)
	rl.rec.wait(t, "resources/unsubscribe", 1)
	h.expectNothing(200 * time.Millisecond)
	h.close()
	waitFor(t, "DELETE of the session", func() bool {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		return rl.deletes == 1
	})
}

// A host that never retries: after the wait the remote's request gets an
// error and the call is cancelled at the remote.
func TestTranslateModernHostNoRetry(t *testing.T) {
	old := suspendTimeout
	suspendTimeout = 300 * time.Millisecond
	t.Cleanup(func() { suspendTimeout = old })
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
	if r, _ := h.response("1", 10*time.Second); dig(r, "result", "resultType") != "input_required" {
		t.Fatalf("got %v", r)
	}
	resp := obj(t, rl.rec.wait(t, "(response)", 1)[0].body)
	if resp["id"] != float64(100) || !contains(jsonText(resp["error"]), "did not answer") {
		t.Errorf("the remote's request was answered with %v", resp)
	}
	rl.rec.wait(t, "notifications/cancelled", 1)
	h.expectNothing(200 * time.Millisecond)
}

// The host leaves while a call waits for its retry: the bridge still
// answers the remote and exits promptly (goleak checks the rest).
func TestTranslateModernHostLeavesSuspended(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
	h.response("1", 10*time.Second)
	start := time.Now()
	h.close()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v to return", d)
	}
	rl.rec.wait(t, "(response)", 1)
	rl.rec.wait(t, "notifications/cancelled", 1)
	waitFor(t, "DELETE of the session", func() bool {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		return rl.deletes == 1
	})
}

// A roots/list on the GET stream belongs to no call (2025 transports: GET
// stream messages "SHOULD be unrelated to any concurrently-running JSON-RPC
// request"), even with a call in flight: the call is not cut into an input
// round. The bridge answers it: -32602 (SEP-2260) until the host has given
// its roots in an input round, then those roots.
func TestTranslateModernHostRootsOnGETStream(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
	h := startHost(t, Config{URL: srv.URL})
	env := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`
	call := func(id int, tool, extra string) map[string]any {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{},%s%s}}`, id, tool, extra, env))
		r, _ := h.response(strconv.Itoa(id), 10*time.Second)
		return r
	}
	r := call(1, "rootsget", "")
	if dig(r, "result", "resultType") != "complete" || dig(r, "result", "roots", "error", "code") != float64(wire.CodeInvalidParams) {
		t.Fatalf("a call in flight while roots/list came on the GET stream: %v, want its own result, the roots/list refused with -32602", r)
	}
	ir := call(2, "askroots", "")
	state, _ := dig(ir, "result", "requestState").(string)
	if dig(ir, "result", "inputRequests", "input-1", "method") != "roots/list" || state == "" {
		t.Fatalf("askroots: %v", ir)
	}
	r = call(3, "askroots", fmt.Sprintf(`"inputResponses":{"input-1":{"roots":[{"uri":"file:///host"}]}},"requestState":%q,`, state))
	if dig(r, "result", "roots", "result", "roots") == nil {
		t.Fatalf("askroots retry: %v", r)
	}
	r = call(4, "rootsget", "")
	if got := jsonText(dig(r, "result", "roots", "result")); got != `{"roots":[{"uri":"file:///host"}]}` {
		t.Errorf("roots/list on the GET stream after the host gave its roots: %v, want them", r)
	}
}
