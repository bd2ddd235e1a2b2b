package aggregate

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gatedReader holds a server's output until gate is closed: the server
// runs, but the aggregate hears nothing from it, as from a child still
// downloading or one that never answers initialize.
type gatedReader struct {
	r      io.ReadCloser
	gate   <-chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (g *gatedReader) Read(p []byte) (int, error) {
	select {
	case <-g.gate:
	case <-g.closed:
		return 0, io.ErrClosedPipe
	}
	return g.r.Read(p)
}

func (g *gatedReader) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.r.Close()
}

// gated returns the Server entry that dials p with its output held until
// gate is closed.
func (p *pipeServer) gated(name string, gate <-chan struct{}) Server {
	inner := p.server(name)
	return Server{Name: name, Dial: func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		out, in, closeWait, err := inner.Dial(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		g := &gatedReader{r: out, gate: gate, closed: make(chan struct{})}
		return g, in, func() error {
			g.Close()
			return closeWait()
		}, nil
	}}
}

// closeOnce returns a function that closes ch, safe to call twice; it is
// also called when the test ends, so that no script waits on it forever.
func closeOnce(t *testing.T, ch chan struct{}) func() {
	var once sync.Once
	f := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(f)
	return f
}

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	slices.Sort(got)
	return got
}

// TestStragglerJoins: a server that does not answer initialize does not
// hold up the session: the client's initialize is answered after
// JoinTimeout with the other server's tools only. Once the straggler
// answers, it joins: the client gets list_changed for its tools, prompts
// and resources, and a re-list made at once shows its entries, which can
// be called. Names the client has seen keep their owner: the straggler,
// though listed first, ranks last, so its resource with a URI alpha has
// too is the one renamed.
func TestStragglerJoins(t *testing.T) {
	alpha, _ := twoServers()
	slow := newPipeServer("slow", nil)
	textTool(slow.srv, "slow", "late")
	slow.srv.AddPrompt(&mcp.Prompt{Name: "hint"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hint from slow"}}}}, nil
	})
	slow.srv.AddResource(&mcp.Resource{URI: "file:///alpha.txt", Name: "also"}, readText("slow file"))
	gate := make(chan struct{})
	release := closeOnce(t, gate)
	const joinTimeout = time.Second // alpha must be in the first answer, even under load
	h := newHarness(t, Config{
		Servers:     []Server{slow.gated("slow", gate), alpha.server("alpha")},
		JoinTimeout: joinTimeout,
	})
	toolsChanged := make(chan struct{}, 8)
	promptsChanged := make(chan struct{}, 8)
	resourcesChanged := make(chan struct{}, 8)
	began := time.Now()
	cs := h.connect(&mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged <- struct{}{} },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resourcesChanged <- struct{}{} },
	})
	// The straggler has not been released: the answer cannot have waited
	// for it.
	t.Logf("initialize answered in %v (JoinTimeout %v), the straggler not yet released", time.Since(began), joinTimeout)
	ctx := ctxT(t)
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
		t.Errorf("tools before the straggler joined: %v", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_late"})
	if err == nil && !r.IsError {
		t.Errorf("slow_late answered before slow joined: %+v", r)
	}

	released := time.Now()
	release()
	for what, ch := range map[string]chan struct{}{"tools": toolsChanged, "prompts": promptsChanged, "resources": resourcesChanged} {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no %s/list_changed after the straggler was released", what)
		}
	}
	t.Logf("list_changed %v after the straggler was released", time.Since(released))
	if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_add", "alpha_echo", "slow_late"}) {
		t.Errorf("tools after the straggler joined: %v", got)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_late", Arguments: map[string]any{"text": "x"}})
	if err != nil || resultText(t, r) != "slow:late:x" {
		t.Errorf("slow_late: %v %+v", err, r)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "slow_hint"})
	if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "hint from slow" {
		t.Errorf("slow_hint: %v", err)
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	uris := names(res.Resources, func(r *mcp.Resource) string { return r.URI })
	if !contains(uris, "file:///alpha.txt") || !contains(uris, "mcp-bridge://slow/file:///alpha.txt") {
		t.Errorf("resources: %v", uris)
	}
	for uri, want := range map[string]string{"file:///alpha.txt": "alpha file", "mcp-bridge://slow/file:///alpha.txt": "slow file"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || !strings.HasPrefix(rr.Contents[0].Text, want) {
			t.Errorf("read %s: %v %+v", uri, err, rr)
		}
	}
	if !logHas(h, "joined the session late") {
		t.Error("the join is not logged")
	}
}

// TestStragglerNeverAnswers: a server that never answers initialize is
// left out after StartTimeout, logged, and never announced; the session
// answered long before and works meanwhile and after. A session closed
// while a server is still starting, or while a late server is being
// listed, ends at once and leaks nothing (goleak in TestMain).
func TestStragglerNeverAnswers(t *testing.T) {
	t.Run("left out", func(t *testing.T) {
		alpha, _ := twoServers()
		gaveUp := make(chan struct{})
		mute := scripted(t, "mute", func(p *scriptPeer) {
			p.drain() // until the aggregate closes its input
			close(gaveUp)
		})
		// JoinTimeout leaves alpha time to initialize on a loaded machine
		// (it must be in the first answer); StartTimeout is well past it.
		const startTimeout = 5 * time.Second
		h := newHarness(t, Config{
			Servers:      []Server{mute, alpha.server("alpha")},
			StartTimeout: startTimeout,
			JoinTimeout:  time.Second,
		})
		changed := make(chan struct{}, 8)
		began := time.Now()
		cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
		select {
		case <-gaveUp:
			t.Fatalf("initialize was answered only after the straggler was given up (%v)", time.Since(began))
		default:
		}
		ctx := ctxT(t)
		if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
			t.Errorf("tools while mute starts: %v", got)
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "a"}})
		if err != nil || resultText(t, r) != "alpha:echo:a" {
			t.Errorf("alpha_echo while mute starts: %v", err)
		}
		select {
		case <-gaveUp:
		case <-ctx.Done():
			t.Fatal("the straggler was never given up")
		}
		t.Logf("straggler given up %v after the session began (StartTimeout %v)", time.Since(began), startTimeout)
		if got := toolNames(t, ctx, cs); !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
			t.Errorf("tools after mute was given up: %v", got)
		}
		r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "b"}})
		if err != nil || resultText(t, r) != "alpha:echo:b" {
			t.Errorf("alpha_echo after mute was given up: %v", err)
		}
		if len(changed) != 0 {
			t.Error("list_changed for a server that never joined")
		}
		if !logHas(h, `"server":"mute"`) || !logHas(h, "did not initialize") {
			t.Error("the straggler's failure is not logged")
		}
	})

	t.Run("closed while starting", func(t *testing.T) {
		alpha, _ := twoServers()
		mute := scripted(t, "mute", func(p *scriptPeer) { p.drain() })
		// The default StartTimeout (30 s) outlasts waitFor: a session end
		// that waited for the start would fail the harness's check that
		// Run returns.
		// alpha must be in the first answer even on a loaded machine.
		h := newHarness(t, Config{Servers: []Server{mute, alpha.server("alpha")}, JoinTimeout: time.Second})
		cs := h.connect(nil)
		if got := toolNames(t, ctxT(t), cs); !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
			t.Errorf("tools: %v", got)
		}
	})

	t.Run("closed while joining", func(t *testing.T) {
		alpha, _ := twoServers()
		gate := make(chan struct{})
		release := closeOnce(t, gate)
		listing := make(chan struct{})
		// It answers initialize once released, then never answers a list
		// (ListTimeout is the default 30 s).
		stuck := scripted(t, "stuck", func(p *scriptPeer) {
			m := p.read()
			select {
			case <-gate:
			case <-t.Context().Done():
			}
			p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stuck","version":"1"}}}`)
			for m := p.read(); !m.eof; m = p.read() {
				if m.method == "tools/list" && listing != nil {
					close(listing)
					listing = nil
				}
			}
		})
		h := newHarness(t, Config{Servers: []Server{stuck, alpha.server("alpha")}, JoinTimeout: time.Second})
		wait := listing
		var began time.Time
		t.Cleanup(func() { // after the harness has seen Run return
			if !began.IsZero() {
				t.Logf("session closed mid-join; Run returned %v after the close", time.Since(began))
			}
		})
		cs := h.connect(nil)
		release()
		select {
		case <-wait:
		case <-ctxT(t).Done():
			t.Fatal("the late server was never listed")
		}
		began = time.Now()
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
	})
}

// toolScript is a hand-rolled server: it answers tools/list, prompts/list
// and tools/call (logging a message first), refuses other requests, and
// records every method it reads.
type toolScript struct {
	name, caps string
	gate       <-chan struct{}     // if set, initialize is answered once it is closed
	early      func(p *scriptPeer) // run before its initialize answer
	before     func(p *scriptPeer) // run after its initialize answer
	firstList  func()              // run before its first tools/list answer
	answers    chan string         // if set, gets the answers it reads

	mu   sync.Mutex
	seen []string
}

// wait waits for ch or the end of the test.
func wait(t *testing.T, ch <-chan struct{}) {
	select {
	case <-ch:
	case <-t.Context().Done():
	}
}

func (ts *toolScript) server(t *testing.T) Server {
	return scripted(t, ts.name, func(p *scriptPeer) {
		m := p.read()
		if m.eof {
			return
		}
		if ts.gate != nil {
			wait(t, ts.gate)
		}
		if ts.early != nil {
			ts.early(p)
		}
		p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"protocolVersion":"2025-11-25","capabilities":` + ts.caps + `,"serverInfo":{"name":"` + ts.name + `","version":"1"}}}`)
		if ts.before != nil {
			ts.before(p)
		}
		for m := p.read(); !m.eof; m = p.read() {
			ts.mu.Lock()
			ts.seen = append(ts.seen, m.method)
			ts.mu.Unlock()
			id := string(m.id)
			switch {
			case id != "" && m.method == "" && ts.answers != nil:
				ts.answers <- m.raw
			case id == "" || m.method == "":
			case m.method == "tools/list":
				if ts.firstList != nil {
					ts.firstList()
					ts.firstList = nil
				}
				p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`)
			case m.method == "prompts/list":
				p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"prompts":[{"name":"p"}]}}`)
			case m.method == "tools/call":
				p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"call-log"}}`)
				p.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + ts.name + `"}]}}`)
			default:
				p.write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no"}}`)
			}
		}
	})
}

func (ts *toolScript) methods() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.seen)
}

// TestLateServerSilentUntilJoined: a late server that answers initialize
// while the client's answer is still being prepared (the ready server's
// tools/list is held) and at once logs, announces a list change and asks
// the client for its roots: none of it reaches the client before its
// initialize answer, which is the client's first message. It is held, in
// order, and handed on once the server has joined: the client then gets
// it, and the server gets the client's answer under its own id. The
// join's own list_changed comes last.
func TestLateServerSilentUntilJoined(t *testing.T) {
	listing, hold := make(chan struct{}), make(chan struct{})
	ready := &toolScript{name: "ready", caps: `{"tools":{},"logging":{}}`, firstList: func() {
		close(listing) // initialize has stopped waiting for late
		wait(t, hold)
	}}
	gate, junkDone := make(chan struct{}), make(chan struct{})
	late := &toolScript{name: "late", caps: `{"tools":{},"logging":{}}`, gate: gate, answers: make(chan string, 4), before: func(p *scriptPeer) {
		p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"early-log"}}`)
		p.write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		p.write(`{"jsonrpc":"2.0","id":"early","method":"roots/list"}`)
		p.write(`{"jsonrpc":"2.0","id":"link","method":"ping"}`)
		// Its lines are handled in order: the ping's answer comes after
		// the rest has been dealt with.
		if m := p.read(); string(m.id) != `"link"` {
			t.Errorf("late got %q for its ping", m.raw)
		}
		close(junkDone)
	}}
	h := newHarness(t, Config{Servers: []Server{ready.server(t), late.server(t)}, JoinTimeout: time.Second})
	c := h.raw()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	ctx := ctxT(t)
	for _, step := range []struct {
		what       string
		done, then chan struct{}
	}{{"ready listed", listing, gate}, {"late's junk handled", junkDone, hold}} {
		select {
		case <-step.done:
		case <-ctx.Done():
			t.Fatalf("never %s", step.what)
		}
		close(step.then)
	}
	if m := c.next(); m["id"] != "init" {
		t.Fatalf("first message to the client: %s", jsonOf(m))
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	changed := 0
	seen := collect(c, func(seen []map[string]any) bool {
		if len(seen) > 0 && seen[len(seen)-1]["method"] == "notifications/tools/list_changed" {
			changed++
		}
		return changed == 2 // the server's own, then the join's
	})
	var order []string
	var rootsID string
	for _, m := range seen {
		method, _ := m["method"].(string)
		order = append(order, method)
		if method == "roots/list" {
			rootsID = jsonOf(m["id"])
		}
	}
	if want := []string{"notifications/message", "notifications/tools/list_changed", "roots/list", "notifications/tools/list_changed"}; !slices.Equal(order, want) {
		t.Errorf("after the answer the client got %v, want %v", order, want)
	}
	if rootsID == "" || rootsID == `"early"` {
		t.Fatalf("roots/list id %s", rootsID)
	}
	c.send(`{"jsonrpc":"2.0","id":` + rootsID + `,"result":{"roots":[{"uri":"file:///r"}]}}`)
	select {
	case a := <-late.answers:
		if !strings.Contains(a, `"id":"early"`) || !strings.Contains(a, "file:///r") {
			t.Errorf("late got %s", a)
		}
	case <-ctx.Done():
		t.Fatal("late never got the roots")
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"late_t"}}`)
	seen = collect(c, func(seen []map[string]any) bool { return len(seen) > 0 && seen[len(seen)-1]["id"] != nil })
	if m := seen[len(seen)-1]; m["id"] != float64(2) || !strings.Contains(jsonOf(m), `"late"`) {
		t.Errorf("late_t: %s", jsonOf(m))
	}
}

// TestLateCapabilitiesNotOffered: logging and completions that only a
// late server has were not in the initialize answer, so the session does
// not use them: its log messages are dropped, completion/complete for its
// prompt is refused, and logging/setLevel does not reach it.
func TestLateCapabilitiesNotOffered(t *testing.T) {
	ready := &toolScript{name: "ready", caps: `{"tools":{}}`}
	gate := make(chan struct{})
	late := &toolScript{name: "late", caps: `{"tools":{},"prompts":{},"logging":{},"completions":{}}`, gate: gate}
	h := newHarness(t, Config{Servers: []Server{ready.server(t), late.server(t)}, JoinTimeout: time.Second})
	c := h.raw()
	init := c.initialize()
	caps := jsonOf(init["result"].(map[string]any)["capabilities"])
	if strings.Contains(caps, "logging") || strings.Contains(caps, "completions") {
		t.Errorf("capabilities: %s", caps)
	}
	close(gate)
	collect(c, func(seen []map[string]any) bool {
		return len(seen) > 0 && seen[len(seen)-1]["method"] == "notifications/prompts/list_changed"
	})
	c.send(`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"late_p"},"argument":{"name":"a","value":"b"}}}`)
	if m := c.next(); m["id"] != float64(2) || m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32601) {
		t.Errorf("completion/complete: %s", jsonOf(m))
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`)
	if m := c.next(); m["id"] != float64(3) || m["result"] == nil {
		t.Errorf("logging/setLevel: %s", jsonOf(m))
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"late_t"}}`)
	if m := c.next(); m["id"] != float64(4) || !strings.Contains(jsonOf(m), `"late"`) {
		t.Errorf("late_t: %s", jsonOf(m))
	}
	for _, m := range late.methods() {
		if m == "completion/complete" || m == "logging/setLevel" {
			t.Errorf("late got %s", m)
		}
	}
}

// TestLateServerHeldBounded: what a late server sends before it joins is
// held up to a bound; the rest is dropped with a warning.
func TestLateServerHeldBounded(t *testing.T) {
	ready := &toolScript{name: "ready", caps: `{"tools":{},"logging":{}}`}
	gate, flooded := make(chan struct{}), make(chan struct{})
	// Before its initialize answer ("pings and logging" are allowed then),
	// so that all of it comes while it is starting.
	late := &toolScript{name: "late", caps: `{"tools":{},"logging":{}}`, gate: gate, early: func(p *scriptPeer) {
		for range 3 * maxHeld {
			p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}`)
		}
		p.write(`{"jsonrpc":"2.0","id":"link","method":"ping"}`)
		p.read() // the ping's answer: the flood has been dealt with
		close(flooded)
	}}
	h := newHarness(t, Config{Servers: []Server{ready.server(t), late.server(t)}, JoinTimeout: time.Second})
	c := h.raw()
	c.initialize()
	close(gate)
	seen := collect(c, func(seen []map[string]any) bool {
		return len(seen) > 0 && seen[len(seen)-1]["method"] == "notifications/tools/list_changed"
	})
	select {
	case <-flooded:
	case <-ctxT(t).Done():
		t.Fatal("the flood was never dealt with")
	}
	if n := len(seen) - 1; n != maxHeld {
		t.Errorf("the client got %d held messages, want %d", n, maxHeld)
	}
	if !logHas(h, "too much held") {
		t.Error("the drop is not logged")
	}
}
