package aggregate

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A scriptPeer is a downstream played by a test script over pipes: it
// sees the aggregate's lines and writes whatever it likes back.
type scriptPeer struct {
	rd *bufio.Reader
	w  io.Writer
}

type peerMsg struct {
	eof    bool
	id     json.RawMessage
	method string
	raw    string
}

func (p *scriptPeer) read() peerMsg {
	line, err := p.rd.ReadString('\n')
	if err != nil {
		return peerMsg{eof: true}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal([]byte(line), &m)
	return peerMsg{id: m.ID, method: m.Method, raw: line}
}

func (p *scriptPeer) write(line string) { io.WriteString(p.w, line+"\n") }

// drain reads until the aggregate closes the server's input.
func (p *scriptPeer) drain() {
	for !p.read().eof {
	}
}

// initOK answers initialize with the given capabilities.
func (p *scriptPeer) initOK(caps string) bool {
	m := p.read()
	if m.eof {
		return false
	}
	p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"serverInfo":{"name":"script","version":"1"}}}`)
	return true
}

// scripted is a downstream that runs script once per session.
func scripted(t *testing.T, name string, script func(p *scriptPeer)) Server {
	return Server{Name: name, Dial: func(context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		var wg sync.WaitGroup
		wg.Go(func() {
			script(&scriptPeer{rd: bufio.NewReader(inR), w: outW})
			outW.Close() // the server has exited
			io.Copy(io.Discard, inR)
		})
		return outR, inW, func() error {
			inW.Close()
			outR.Close()
			wg.Wait()
			return nil
		}, nil
	}}
}

// collect reads messages from the aggregate until done says it has seen
// enough, and returns them.
func collect(c *rawClient, done func(seen []map[string]any) bool) []map[string]any {
	var seen []map[string]any
	for !done(seen) {
		seen = append(seen, c.next())
	}
	return seen
}

// has reports whether seen holds a message with this id and one whose
// log data is marker.
func has(id any, marker string) func([]map[string]any) bool {
	return func(seen []map[string]any) bool {
		var gotID, gotMarker bool
		for _, m := range seen {
			gotID = gotID || m["id"] == id
			if p, ok := m["params"].(map[string]any); ok && p["data"] == marker {
				gotMarker = true
			}
		}
		return gotID && gotMarker
	}
}

// TestHostileDownstream: a server answering with a stranger's id, with an
// id of the wrong type and twice, and sending progress for a token it was
// never given, gets none of it to the client: the client sees exactly one
// answer per request, under its own id, with the real result. Every line
// of the server is read in order, so once its marker log message (sent
// after the junk) reaches the client, all the junk has been dealt with.
func TestHostileDownstream(t *testing.T) {
	evil := scripted(t, "evil", func(p *scriptPeer) {
		if !p.initOK(`{"tools":{}}`) {
			return
		}
		for n := 1; ; n++ {
			m := p.read()
			if m.eof {
				return
			}
			if m.id == nil {
				n--
				continue // a notification
			}
			id := string(m.id)
			p.write(`{"jsonrpc":"2.0","id":4242,"result":{"tools":[{"name":"stolen"}],"content":[{"type":"text","text":"stolen"}]}}`)
			p.write(`{"jsonrpc":"2.0","id":"` + id + `","result":{"tools":[{"name":"stolen"}],"content":[{"type":"text","text":"stolen"}]}}`)
			p.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":99999,"progress":1}}`)
			p.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + id + `","progress":1}}`)
			p.write(`{"jsonrpc":"2.0","ID":` + id + `,"id":` + id + `,"result":{"tools":[{"name":"stolen"}],"content":[{"type":"text","text":"stolen"}]}}`)
			p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object"}}],"content":[{"type":"text","text":"real"}]}}`)
			p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"dup"}],"content":[{"type":"text","text":"stolen"}]}}`)
			p.write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":1,"message":"stolen"}}`)
			p.write(`{"jsonrpc":"2.0","id":{"x":1},"result":{}}`)
			p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"marker-` + string(rune('0'+n)) + `"}}`)
		}
	})
	h := newHarness(t, Config{Servers: []Server{evil}})
	c := h.raw()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	seen := collect(c, has("init", "marker-1")) // initialize lists the tools once
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	seen = append(seen, collect(c, has(float64(2), "marker-2"))...)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"evil_ok","_meta":{"progressToken":"p"}}}`)
	seen = append(seen, collect(c, has(float64(3), "marker-3"))...)

	answers := map[any]int{}
	for _, m := range seen {
		s := jsonOf(m)
		if strings.Contains(s, "stolen") || strings.Contains(s, "dup") || strings.Contains(s, "4242") || strings.Contains(s, "99999") {
			t.Errorf("junk of the server reached the client: %s", s)
		}
		if _, ok := m["method"]; !ok {
			answers[m["id"]]++
		} else if m["method"] != "notifications/message" {
			t.Errorf("unexpected message to the client: %s", s)
		}
	}
	if len(answers) != 3 || answers["init"] != 1 || answers[float64(2)] != 1 || answers[float64(3)] != 1 {
		t.Errorf("answers by id: %v", answers)
	}
	for _, m := range seen {
		switch m["id"] {
		case float64(2):
			if got := jsonOf(m["result"]); !strings.Contains(got, `"name":"evil_ok"`) {
				t.Errorf("tools/list: %s", got)
			}
		case float64(3):
			if got := jsonOf(m["result"]); !strings.Contains(got, `"real"`) {
				t.Errorf("tools/call: %s", got)
			}
		}
	}
	if !logHas(h, "answer from a server to no request") {
		t.Error("stray answers not logged")
	}
}

// TestHostileRelay: a server's request to the client reaches it under an
// id the aggregate minted; the client's answer goes back under the
// server's id, once: a second answer and an answer to an id never sent
// are dropped.
func TestHostileRelay(t *testing.T) {
	got := make(chan string, 4)
	asker := scripted(t, "asker", func(p *scriptPeer) {
		if !p.initOK(`{}`) {
			return
		}
		p.write(`{"jsonrpc":"2.0","id":"mine-1","method":"roots/list","params":{"_meta":{"progressToken":"srv-tok"}}}`)
		for {
			m := p.read()
			if m.eof {
				return
			}
			if m.method != "notifications/initialized" {
				got <- strings.TrimSpace(m.raw)
			}
		}
	})
	h := newHarness(t, Config{Servers: []Server{asker}})
	c := h.raw()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	var req map[string]any
	for _, m := range collect(c, func(seen []map[string]any) bool { return len(seen) == 2 }) {
		if m["method"] == "roots/list" {
			req = m
		}
	}
	if req == nil {
		t.Fatal("roots/list not relayed")
	}
	id := jsonOf(req["id"])
	tok := jsonOf(req["params"].(map[string]any)["_meta"].(map[string]any)["progressToken"])
	if id == `"mine-1"` || tok == `"srv-tok"` {
		t.Errorf("the server's own id or token reached the client: %v", req)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + tok + `,"progress":1}}`)
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[{"uri":"file:///r"}]}}`)
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[{"uri":"file:///second"}]}}`)
	c.send(`{"jsonrpc":"2.0","id":777,"result":{"roots":[]}}`)
	c.send(`{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`)
	if m := c.next(); m["id"] != "ping-1" {
		t.Errorf("ping: %v", m)
	}
	// The client's messages reach the server in order; the notification
	// sent last shows that nothing came between.
	c.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	progress, answer, last := <-got, <-got, <-got
	if !strings.Contains(progress, `"progressToken":"srv-tok"`) {
		t.Errorf("the server got progress %s", progress)
	}
	if !strings.Contains(answer, `"id":"mine-1"`) || !strings.Contains(answer, "file:///r") {
		t.Errorf("the server got %s", answer)
	}
	if !strings.Contains(last, "notifications/roots/list_changed") {
		t.Errorf("the server got %s", last)
	}
	if !logHas(h, "answer from the client to no request") {
		t.Error("stray client answers not logged")
	}
}

// TestRawClientErrors: what a client gets for requests the aggregate
// cannot serve.
func TestRawClientErrors(t *testing.T) {
	alpha, _ := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}})
	c := h.raw()
	for _, tc := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "not initialized"},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `"result":{}`},
		{`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}`, "protocolVersion is missing"},
		{`not json`, `"code":-32700`},
		{`{"jsonrpc":"2.0","id":5,"ID":6,"method":"ping"}`, `"code":-32600`},
	} {
		c.send(tc.send)
		if got := jsonOf(c.next()); !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.send, got, tc.want)
		}
	}
	init := c.initialize()
	if !strings.Contains(jsonOf(init), `"mcp-bridge aggregate"`) {
		t.Fatalf("initialize: %v", init)
	}
	for _, tc := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, "already initialized"},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"cursor":"x"}}`, "invalid cursor"},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}`, "unknown tool"},
		{`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"nowhere://x"}}`, "Resource not found"}, // the only server with resources is asked
		{`{"jsonrpc":"2.0","id":11,"method":"completion/complete","params":{"ref":{"type":"ref/x"}}}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"debug"}}`, `"result":{}`},
		{`{"jsonrpc":"2.0","id":13,"method":"sampling/createMessage","params":{}}`, `"code":-32601`},
	} {
		c.send(tc.send)
		if got := jsonOf(c.next()); !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.send, got, tc.want)
		}
	}
}

// TestVersionNegotiated: an old client version is passed on to the
// servers; an unknown one gets the aggregate's newest.
func TestVersionNegotiated(t *testing.T) {
	for requested, want := range map[string]string{"2025-06-18": "2025-06-18", "2099-01-01": "2025-11-25"} {
		seenByServer := make(chan string, 1)
		srv := scripted(t, "s", func(p *scriptPeer) {
			m := p.read()
			var req struct {
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
					ClientInfo      struct{ Name string }
				}
			}
			json.Unmarshal([]byte(m.raw), &req)
			seenByServer <- req.Params.ProtocolVersion + "/" + req.Params.ClientInfo.Name
			p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"protocolVersion":"` + req.Params.ProtocolVersion + `","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
			p.drain()
		})
		h := newHarness(t, Config{Servers: []Server{srv}})
		c := h.raw()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + requested + `","capabilities":{},"clientInfo":{"name":"picky","version":"1"}}}`)
		m := c.next()
		if got := m["result"].(map[string]any)["protocolVersion"]; got != want {
			t.Errorf("%s: client got %v, want %s", requested, got, want)
		}
		if got := <-seenByServer; got != want+"/picky" {
			t.Errorf("%s: server was asked %s", requested, got)
		}
	}
}

// TestInflightBound: a request over MaxInflight is refused at once; the
// session keeps serving.
func TestInflightBound(t *testing.T) {
	alpha := newPipeServer("alpha", nil)
	entered := make(chan struct{})
	alpha.srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}, MaxInflight: 1})
	c := h.raw()
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha_hang"}}`)
	<-entered
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := jsonOf(c.next()); !strings.Contains(m, `"id":2`) || !strings.Contains(m, "too many requests in flight") {
		t.Errorf("over the bound: %s", m)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := jsonOf(c.next()); !strings.Contains(m, `"id":3`) || !strings.Contains(m, `"result":{}`) {
		t.Errorf("ping: %s", m)
	}
}

// TestServerNotReading: a server that floods requests and never reads its
// input cannot stall the session: the answers to it queue up to a bound,
// the rest are dropped with a warning, and its later messages still reach
// the client.
func TestServerNotReading(t *testing.T) {
	flooder := scripted(t, "flooder", func(p *scriptPeer) {
		if !p.initOK(`{}`) {
			return
		}
		for i := range 2 * maxQueued {
			p.write(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`)
		}
		p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after-flood"}}`)
		p.drain()
	})
	h := newHarness(t, Config{Servers: []Server{flooder}})
	c := h.raw()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	collect(c, has("init", "after-flood"))
	if !logHas(h, "not reading its input") {
		t.Error("the dropped messages were not logged")
	}
}

// TestStrangersIDs: a server that answers every id it can think of — the
// ids of another server's requests in flight included — reaches neither
// that server's caller nor anyone else: ids are per server.
func TestStrangersIDs(t *testing.T) {
	alpha := newPipeServer("alpha", nil)
	entered, release := make(chan struct{}), make(chan struct{})
	alpha.srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-release
			return textResult("alpha-real"), nil
		})
	evil := scripted(t, "evil", func(p *scriptPeer) {
		if !p.initOK(`{"tools":{}}`) {
			return
		}
		for {
			m := p.read()
			if m.eof {
				return
			}
			if m.id == nil {
				continue
			}
			for i := range 50 {
				if id := strconv.Itoa(i); id != string(m.id) {
					p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"stolen"}],"content":[{"type":"text","text":"stolen"}]}}`)
				}
			}
			p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"tools":[{"name":"x","inputSchema":{"type":"object"}}],"content":[{"type":"text","text":"evil-real"}]}}`)
			p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"evil-done"}}`)
		}
	})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), evil}})
	c := h.raw()
	// initialize lists evil's tools once: its junk and marker come too.
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	seen := collect(c, has("init", "evil-done"))
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"alpha_hang"}}`)
	select {
	case <-entered:
	case <-ctxT(t).Done():
		t.Fatal("alpha_hang was not called")
	}
	c.send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"evil_x"}}`)
	seen = append(seen, collect(c, has(float64(11), "evil-done"))...)
	close(release)
	seen = append(seen, collect(c, func(seen []map[string]any) bool { return len(seen) == 1 })...)
	got := map[any]string{}
	for _, m := range seen {
		s := jsonOf(m)
		if strings.Contains(s, "stolen") {
			t.Errorf("a stranger's answer reached the client: %s", s)
		}
		if _, ok := m["method"]; !ok {
			got[m["id"]] = jsonOf(m["result"])
		}
	}
	if !strings.Contains(got[float64(10)], "alpha-real") || !strings.Contains(got[float64(11)], "evil-real") || len(got) != 3 {
		t.Errorf("answers: %v", got)
	}
}
