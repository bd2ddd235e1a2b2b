package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// twoServers are alpha (tools, prompts, a resource, a template) and beta
// (tools in pages of one, a prompt, a resource).
func twoServers() (alpha, beta *pipeServer) {
	alpha = newPipeServer("alpha", &mcp.ServerOptions{Instructions: "alpha says hi"})
	textTool(alpha.srv, "alpha", "echo")
	textTool(alpha.srv, "alpha", "add")
	alpha.srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from alpha"}}}}, nil
	})
	alpha.srv.AddResource(&mcp.Resource{URI: "file:///alpha.txt", Name: "alpha.txt"}, readText("alpha file"))
	alpha.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "alpha://notes/{id}", Name: "note"}, readText("alpha note"))

	beta = newPipeServer("beta", &mcp.ServerOptions{PageSize: 1})
	textTool(beta.srv, "beta", "echo")
	textTool(beta.srv, "beta", "shout")
	beta.srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from beta"}}}}, nil
	})
	beta.srv.AddResource(&mcp.Resource{URI: "beta://readme", Name: "readme"}, readText("beta readme"))
	return alpha, beta
}

func readText(text string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text + " " + req.Params.URI}}}, nil
	}
}

// TestListsMergedAndCallsRouted: the lists of both servers, every page,
// under <server>_<name>; calls, prompts and reads reach the owner under
// the owner's own name.
func TestListsMergedAndCallsRouted(t *testing.T) {
	alpha, beta := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	cs := h.connect(nil)
	ctx := ctxT(t)

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "mcp-bridge aggregate" || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize result: %+v", init)
	}
	if c := init.Capabilities; c.Tools == nil || !c.Tools.ListChanged || c.Prompts == nil || !c.Prompts.ListChanged || c.Resources == nil || !c.Resources.ListChanged {
		t.Errorf("capabilities: %+v", c)
	}
	if !strings.Contains(init.Instructions, "alpha: alpha says hi") {
		t.Errorf("instructions: %q", init.Instructions)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	slices.Sort(got)
	if want := []string{"alpha_add", "alpha_echo", "beta_echo", "beta_shout"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	for name, want := range map[string]string{"alpha_echo": "alpha:echo:x", "beta_echo": "beta:echo:x", "beta_shout": "beta:shout:x"} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := resultText(t, r); got != want {
			t.Errorf("%s answered %q, want %q", name, got, want)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); err == nil {
		t.Error("an unprefixed tool name was routed")
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pn := names(prompts.Prompts, func(p *mcp.Prompt) string { return p.Name })
	slices.Sort(pn)
	if !slices.Equal(pn, []string{"alpha_greet", "beta_greet"}) {
		t.Errorf("prompts = %v", pn)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta_greet"})
	if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "hello from beta" {
		t.Errorf("beta_greet: %v %+v", err, p)
	}

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rn := names(res.Resources, func(r *mcp.Resource) string { return r.URI })
	slices.Sort(rn)
	if !slices.Equal(rn, []string{"beta://readme", "file:///alpha.txt"}) {
		t.Errorf("resources = %v", rn)
	}
	for uri, want := range map[string]string{"beta://readme": "beta readme", "file:///alpha.txt": "alpha file", "alpha://notes/7": "alpha note"} {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if r.Contents[0].Text != want+" "+uri {
			t.Errorf("read %s = %q", uri, r.Contents[0].Text)
		}
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != "alpha://notes/{id}" {
		t.Errorf("templates: %v %+v", err, tpl)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nowhere://x"}); err == nil {
		t.Error("a URI no server has was routed")
	}
}

// TestToolCallBeforeList: a client may call a tool it never listed.
func TestToolCallBeforeList(t *testing.T) {
	alpha, beta := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	c := h.raw()
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"beta_shout","arguments":{"text":"y"}}}`)
	m := c.next()
	if m["id"] != float64(1) || !strings.Contains(jsonOf(m["result"]), "beta:shout:y") {
		t.Errorf("answer: %v", m)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDiscoverFallsBack: a go-sdk client that starts with server/discover
// (2026-07-28) falls back to initialize.
func TestDiscoverFallsBack(t *testing.T) {
	alpha, _ := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}})
	cs := h.connectVersion(nil, "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("protocol version %q", v)
	}
	if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "alpha_echo"}); err != nil {
		t.Error(err)
	}
}

// TestProgressCarried: progress from a server reaches the client with the
// client's own token.
func TestProgressCarried(t *testing.T) {
	alpha := newPipeServer("alpha", nil)
	alpha.srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 2; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2})
			}
			return textResult(jsonOf(tok)), nil
		})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}})
	progress := make(chan *mcp.ProgressNotificationParams, 2)
	cs := h.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress <- r.Params
	}})
	params := &mcp.CallToolParams{Name: "alpha_slow"}
	params.SetProgressToken("client-token-1")
	r, err := cs.CallTool(ctxT(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if seen := resultText(t, r); seen == `"client-token-1"` {
		t.Errorf("the server saw the client's own token; the aggregate mints its own")
	}
	for i := 1; i <= 2; i++ {
		select {
		case p := <-progress:
			if p.ProgressToken != "client-token-1" || p.Progress != float64(i) {
				t.Errorf("progress %d: %+v", i, p)
			}
		case <-ctxT(t).Done():
			t.Fatalf("progress %d did not arrive", i)
		}
	}
}

// TestServerRequestsRelayed: sampling, elicitation and roots requests of a
// server reach the client of the session that caused them, and the
// answer reaches the server that asked.
func TestServerRequestsRelayed(t *testing.T) {
	beta := newPipeServer("beta", nil)
	beta.srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "q"}}}})
			if err != nil {
				return nil, err
			}
			e, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			roots, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			return textResult(s.Content.(*mcp.TextContent).Text + "|" + e.Content["n"].(string) + "|" + roots.Roots[0].URI), nil
		})
	alpha, _ := twoServers()
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	client := func(who string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by " + who}}, nil
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": who}}, nil
			},
		})
		c.AddRoots(&mcp.Root{URI: "file:///" + who})
		r, w := h.run()
		cs, err := c.Connect(ctxT(t), &mcp.IOTransport{Reader: r, Writer: w}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	one, two := client("one"), client("two")
	for _, c := range []struct {
		cs  *mcp.ClientSession
		who string
	}{{one, "one"}, {two, "two"}, {one, "one"}} {
		r, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "beta_ask"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := resultText(t, r), "sampled by "+c.who+"|"+c.who+"|file:///"+c.who; got != want {
			t.Errorf("client %s: %q, want %q", c.who, got, want)
		}
	}
}

// TestListChangedReannounced: a server that changes its tools makes the
// client hear list_changed, and the next list has the new tool.
func TestListChangedReannounced(t *testing.T) {
	alpha, _ := twoServers()
	beta := newPipeServer("beta", nil)
	beta.srv.AddTool(&mcp.Tool{Name: "grow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			textTool(beta.srv, "beta", "grown")
			return textResult("ok"), nil
		})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	changed := make(chan struct{}, 8)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := ctxT(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_grow"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name }); !contains(got, "beta_grown") {
		t.Errorf("tools after the change: %v", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_grown", Arguments: map[string]any{"text": "z"}})
	if err != nil || resultText(t, r) != "beta:grown:z" {
		t.Errorf("beta_grown: %v", err)
	}
}

// TestDownstreamKilled: a server that dies fails its call in flight, leaves
// the lists (the client hears list_changed), and the other keeps answering.
func TestDownstreamKilled(t *testing.T) {
	alpha, beta := twoServers()
	entered := make(chan struct{})
	beta.srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	changed := make(chan struct{}, 8)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := ctxT(t)
	hung := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_hang"})
		hung <- err
	}()
	<-entered
	beta.kill()
	select {
	case err := <-hung:
		if err == nil || !strings.Contains(err.Error(), "not running") {
			t.Errorf("call in flight on the killed server: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the call in flight was not failed")
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the server died")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	slices.Sort(got)
	if !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
		t.Errorf("tools after beta died: %v", got)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "still"}}); err != nil || resultText(t, r) != "alpha:echo:still" {
		t.Errorf("alpha after beta died: %v", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_echo"}); err == nil {
		t.Error("a call to the dead server succeeded")
	}
	if !logHas(h, "server ended") {
		t.Error("the death was not logged")
	}
}

// TestCancelCarried: the client's cancellation reaches the server's
// handler.
func TestCancelCarried(t *testing.T) {
	alpha := newPipeServer("alpha", nil)
	entered, cancelled := make(chan struct{}), make(chan struct{})
	alpha.srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha")}})
	cs := h.connect(nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_hang"})
		done <- err
	}()
	<-entered
	cancel()
	select {
	case <-cancelled:
	case <-ctxT(t).Done():
		t.Fatal("the server's handler was not cancelled")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	// The session goes on.
	if _, err := cs.ListTools(ctxT(t), nil); err != nil {
		t.Error(err)
	}
}

// TestCollisions: "a_b"+"c" and "a"+"b_c" both make a_b_c; the first
// server listed keeps it, the other is renamed, the collision is logged at
// initialize, and both route to their owners. Two servers with one
// resource URI: the first keeps it, the other's is rewritten, and both
// read (and subscribe) through their own URI.
func TestCollisions(t *testing.T) {
	ab := newPipeServer("a_b", nil)
	textTool(ab.srv, "a_b", "c")
	ab.srv.AddResource(&mcp.Resource{URI: "file:///same", Name: "same"}, readText("from a_b"))
	updates := make(chan string, 4)
	a := newPipeServer("a", &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	textTool(a.srv, "a", "b_c")
	a.srv.AddResource(&mcp.Resource{URI: "file:///same", Name: "same"}, readText("from a"))
	h := newHarness(t, Config{Servers: []Server{ab.server("a_b"), a.server("a")}})
	cs := h.connect(&mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updates <- r.Params.URI
	}})
	if !logHas(h, `tool name collision: \"a_b_c\" is exposed as \"a_b_c_2\"`) {
		t.Errorf("collision not reported at initialize; log:\n%s", h.log.String())
	}
	ctx := ctxT(t)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	if !slices.Equal(got, []string{"a_b_c", "a_b_c_2"}) {
		t.Errorf("tools = %v", got)
	}
	for name, want := range map[string]string{"a_b_c": "a_b:c:", "a_b_c_2": "a:b_c:"} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil || resultText(t, r) != want {
			t.Errorf("%s: %v", name, err)
		}
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	uris := names(res.Resources, func(r *mcp.Resource) string { return r.URI })
	if !slices.Equal(uris, []string{"file:///same", "mcp-bridge://a/file:///same"}) {
		t.Fatalf("resources = %v", uris)
	}
	for uri, want := range map[string]string{"file:///same": "from a_b file:///same", "mcp-bridge://a/file:///same": "from a file:///same"} {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || r.Contents[0].Text != want {
			t.Errorf("read %s: %v %+v", uri, err, r)
		} else if r.Contents[0].URI != uri {
			t.Errorf("read %s: contents name %s", uri, r.Contents[0].URI)
		}
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mcp-bridge://a/file:///same"}); err != nil {
		t.Fatal(err)
	}
	if err := a.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///same"}); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-updates:
		if u != "mcp-bridge://a/file:///same" {
			t.Errorf("resources/updated for %q", u)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated")
	}
}

// TestStartFailures: a server that cannot start and one that refuses
// initialize are left out and logged; the others serve.
func TestStartFailures(t *testing.T) {
	alpha, _ := twoServers()
	broken := Server{Name: "broken", Dial: func(context.Context) (r io.ReadCloser, w io.WriteCloser, c func() error, err error) {
		return nil, nil, nil, errors.New("no such command")
	}}
	refusing := scripted(t, "refusing", func(p *scriptPeer) {
		m := p.read()
		p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"error":{"code":-32603,"message":"nope"}}`)
		p.drain()
	})
	h := newHarness(t, Config{Servers: []Server{broken, alpha.server("alpha"), refusing}})
	cs := h.connect(nil)
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	slices.Sort(got)
	if !slices.Equal(got, []string{"alpha_add", "alpha_echo"}) {
		t.Errorf("tools = %v", got)
	}
	for _, s := range []string{`"server":"broken"`, "no such command", `"server":"refusing"`, "refused initialize"} {
		if !logHas(h, s) {
			t.Errorf("log lacks %q", s)
		}
	}
}

// TestAllowTool: the filter hook hides a tool from the list and from calls.
func TestAllowTool(t *testing.T) {
	alpha, _ := twoServers()
	h := newHarness(t, Config{
		Servers:   []Server{alpha.server("alpha")},
		AllowTool: func(server, tool string) bool { return tool != "add" },
	})
	cs := h.connect(nil)
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name }); !slices.Equal(got, []string{"alpha_echo"}) {
		t.Errorf("tools = %v", got)
	}
	if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "alpha_add"}); err == nil {
		t.Error("a hidden tool was called")
	}
}

// TestSessionsIndependent: two sessions of one Aggregator each have their
// own downstreams.
func TestSessionsIndependent(t *testing.T) {
	var dials atomic.Int32
	alpha, _ := twoServers()
	srv := alpha.server("alpha")
	dial := srv.Dial
	srv.Dial = func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		dials.Add(1)
		return dial(ctx)
	}
	h := newHarness(t, Config{Servers: []Server{srv}})
	one, two := h.connect(nil), h.connect(nil)
	for _, cs := range []*mcp.ClientSession{one, two} {
		if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "alpha_echo"}); err != nil {
			t.Error(err)
		}
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials for two sessions", n)
	}
}
