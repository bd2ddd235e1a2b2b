package aggregate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// completer answers a completion with "<server>:<ref name or uri>".
func completer(server string) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		ref := req.Params.Ref
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{server + ":" + ref.Name + ref.URI}}}, nil
	}
}

// TestSeparatorAndCompletion: a configured separator names the entries,
// and completion/complete reaches the owner of the prompt or template it
// refers to, under the owner's own name.
func TestSeparatorAndCompletion(t *testing.T) {
	alpha := newPipeServer("alpha", &mcp.ServerOptions{CompletionHandler: completer("alpha")})
	textTool(alpha.srv, "alpha", "echo")
	alpha.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "alpha://notes/{id}", Name: "note"}, readText("alpha note"))
	beta := newPipeServer("beta", &mcp.ServerOptions{CompletionHandler: completer("beta")})
	beta.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}, Separator: "."})
	cs := h.connect(nil)
	ctx := ctxT(t)
	if c := cs.InitializeResult().Capabilities; c.Completions == nil {
		t.Errorf("completions capability missing: %+v", c)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name }); !slices.Equal(got, []string{"alpha.echo"}) {
		t.Errorf("tools = %v", got)
	}
	for ref, want := range map[*mcp.CompleteReference]string{
		{Type: "ref/prompt", Name: "beta.greet"}:          "beta:greet",
		{Type: "ref/resource", URI: "alpha://notes/{id}"}: "alpha:alpha://notes/{id}",
	} {
		r, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "x"}})
		if err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
		if !slices.Equal(r.Completion.Values, []string{want}) {
			t.Errorf("%+v completed to %v, want %s", ref, r.Completion.Values, want)
		}
	}
}

// TestSlowServersLeftOut: a server that never answers initialize is left
// out after StartTimeout, and one that never answers tools/list is left
// out of that list after ListTimeout; the others serve.
func TestSlowServersLeftOut(t *testing.T) {
	alpha, _ := twoServers()
	mute := scripted(t, "mute", func(p *scriptPeer) { p.drain() })
	stuck := scripted(t, "stuck", func(p *scriptPeer) {
		if p.initOK(`{"tools":{}}`) {
			p.drain()
		}
	})
	h := newHarness(t, Config{
		Servers: []Server{alpha.server("alpha"), mute, stuck},
		// Long enough for alpha on a loaded machine (300 ms could be missed):
		// mute and stuck never answer, so they are left out all the same.
		StartTimeout: 2 * time.Second,
		ListTimeout:  2 * time.Second,
	})
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
	for _, s := range []string{`"server":"mute"`, "did not initialize", `"server":"stuck"`, "leaving the server's tools out of the list"} {
		if !logHas(h, s) {
			t.Errorf("log lacks %q", s)
		}
	}
}

// TestDeadServerRequestsCancelled: a request a server relayed to the
// client is cancelled there when the server dies. The server dies once the
// client has the request: dying before the aggregate relayed it (a
// request still held until the session is ready) rightly relays nothing,
// which made this test wait for a message that never comes (1 run in ~40
// on a loaded machine).
func TestDeadServerRequestsCancelled(t *testing.T) {
	relayed := make(chan struct{})
	quitter := scripted(t, "quitter", func(p *scriptPeer) {
		if !p.initOK(`{"tools":{}}`) {
			return
		}
		m := p.read()
		for m.method != "tools/list" && !m.eof {
			m = p.read()
		}
		p.write(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"tools":[]}}`)
		p.write(`{"jsonrpc":"2.0","id":"q","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`)
		select {
		case <-relayed:
		case <-time.After(waitFor):
		}
		// and it ends: the script returns, its output closes
	})
	h := newHarness(t, Config{Servers: []Server{quitter}})
	c := h.raw()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	var asked, cancelled string
	for asked == "" || cancelled == "" {
		m := c.next()
		switch m["method"] {
		case "sampling/createMessage":
			if asked == "" {
				close(relayed)
			}
			asked = jsonOf(m["id"])
		case "notifications/cancelled":
			cancelled = jsonOf(m["params"].(map[string]any)["requestId"])
		}
	}
	if asked != cancelled || asked == `"q"` {
		t.Errorf("asked %s, cancelled %s", asked, cancelled)
	}
	if !strings.Contains(h.log.String(), "server ended") {
		t.Error("the death was not logged")
	}
}

// TestSetLevelFannedOut: logging/setLevel reaches every server, so a
// go-sdk server (silent until a level is set) logs to the client through
// the aggregate.
func TestSetLevelFannedOut(t *testing.T) {
	logger := func(name string) *pipeServer {
		p := newPipeServer(name, nil)
		p.srv.AddTool(&mcp.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "hello from " + name})
				return textResult("logged"), nil
			})
		return p
	}
	alpha, beta := logger("alpha"), logger("beta")
	h := newHarness(t, Config{Servers: []Server{alpha.server("alpha"), beta.server("beta")}})
	logs := make(chan string, 4)
	cs := h.connect(&mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		logs <- fmt.Sprint(r.Params.Data)
	}})
	ctx := ctxT(t)
	if cs.InitializeResult().Capabilities.Logging == nil {
		t.Fatal("no logging capability")
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name + "_log"}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-logs:
			if got != "hello from "+name {
				t.Errorf("log %q", got)
			}
		case <-ctx.Done():
			t.Fatalf("no log from %s", name)
		}
	}
}

// TestRunEndsWithContext: cancelling Run's context ends the session (its
// pipes closed to unblock the read), closes every server and returns
// ctx.Err().
func TestRunEndsWithContext(t *testing.T) {
	closed := make(chan string, 2)
	wrap := func(s Server) Server {
		dial := s.Dial
		s.Dial = func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
			r, w, c, err := dial(ctx)
			return r, w, func() error { closed <- s.Name; return c() }, err
		}
		return s
	}
	alpha, beta := twoServers()
	h := newHarness(t, Config{Servers: []Server{wrap(alpha.server("alpha")), wrap(beta.server("beta"))}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.agg.Run(ctx, inR, outW) }()
	c := &rawClient{t: t, w: inW, rd: bufio.NewReader(outR)}
	c.initialize()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its context ended")
	}
	if got := []string{<-closed, <-closed}; !slices.Contains(got, "alpha") || !slices.Contains(got, "beta") {
		t.Errorf("closed: %v", got)
	}
}
