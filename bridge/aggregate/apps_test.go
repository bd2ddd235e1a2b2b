package aggregate

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const appMIME = "text/html;profile=mcp-app"

// appServer is an MCP App server (SEP-1865): a listed ui://dashboard, a
// template of unlisted ui://widgets/{id}, a tool whose _meta.ui.resourceUri
// names the dashboard, one whose deprecated _meta["ui/resourceUri"] names
// it, and one naming an unlisted widget. Every read answers
// "<name> html <the URI it was asked for>" under that URI.
func appServer(name string, ext map[string]any) *pipeServer {
	p := newPipeServer(name, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Extensions: ext}})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: req.Params.URI, MIMEType: appMIME, Text: name + " html " + req.Params.URI,
		}}}, nil
	}
	p.srv.AddResource(&mcp.Resource{URI: "ui://dashboard", Name: "dashboard", MIMEType: appMIME}, read)
	p.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://widgets/{id}", Name: "widget", MIMEType: appMIME}, read)
	tool := func(tool string, meta mcp.Meta) {
		p.srv.AddTool(&mcp.Tool{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`), Meta: meta},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult(name + ":" + tool), nil
			})
	}
	tool("show", mcp.Meta{"ui": map[string]any{"resourceUri": "ui://dashboard", "visibility": []any{"model", "app"}}})
	tool("legacy", mcp.Meta{"ui/resourceUri": "ui://dashboard"})
	tool("widget", mcp.Meta{"ui": map[string]any{"resourceUri": "ui://widgets/7"}})
	return p
}

func resourceURIOf(t *testing.T, tl *mcp.Tool) string {
	t.Helper()
	if ui, ok := tl.Meta["ui"].(map[string]any); ok {
		s, _ := ui["resourceUri"].(string)
		return s
	}
	s, _ := tl.Meta["ui/resourceUri"].(string)
	return s
}

func readOne(t *testing.T, cs *mcp.ClientSession, uri string) *mcp.ResourceContents {
	t.Helper()
	r, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(r.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(r.Contents))
	}
	return r.Contents[0]
}

// TestAppsUIResources: two MCP App servers with the same ui://dashboard
// behind the aggregate. Each one's UI resources are listed as
// ui://<server>/..., never renamed out of the ui:// scheme; each tool's
// resourceUri (the current and the deprecated key) is the listed URI of
// its own server's resource; reading it reaches the owner under its own
// URI and answers under the listed one; an unlisted UI resource named
// only by a tool is routed too, and templates keep the scheme.
func TestAppsUIResources(t *testing.T) {
	h := newHarness(t, Config{Servers: []Server{appServer("weather", nil).server("weather"), appServer("news", nil).server("news")}})
	cs := h.connect(nil)
	ctx := ctxT(t)

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := names(res.Resources, func(r *mcp.Resource) string { return r.URI })
	slices.Sort(listed)
	if want := []string{"ui://news/dashboard", "ui://weather/dashboard"}; !slices.Equal(listed, want) {
		t.Fatalf("resources = %v, want %v", listed, want)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tnames := names(tmpl.ResourceTemplates, func(r *mcp.ResourceTemplate) string { return r.URITemplate })
	slices.Sort(tnames)
	if want := []string{"ui://news/widgets/{id}", "ui://weather/widgets/{id}"}; !slices.Equal(tnames, want) {
		t.Errorf("templates = %v, want %v", tnames, want)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"weather_show": "ui://weather/dashboard", "weather_legacy": "ui://weather/dashboard", "weather_widget": "ui://weather/widgets/7",
		"news_show": "ui://news/dashboard", "news_legacy": "ui://news/dashboard", "news_widget": "ui://news/widgets/7",
	}
	for _, tl := range tools.Tools {
		uri := resourceURIOf(t, tl)
		if uri != want[tl.Name] {
			t.Errorf("%s: resourceUri %q, want %q", tl.Name, uri, want[tl.Name])
		}
		if v, _ := tl.Meta["ui"].(map[string]any); tl.Name == "weather_show" && len(v["visibility"].([]any)) != 2 {
			t.Errorf("weather_show lost the rest of _meta.ui: %v", tl.Meta)
		}
		server, _, _ := strings.Cut(tl.Name, "_")
		c := readOne(t, cs, uri)
		orig := "ui://" + strings.TrimPrefix(uri, "ui://"+server+"/")
		if c.URI != uri || c.Text != server+" html "+orig || c.MIMEType != appMIME {
			t.Errorf("read %s (tool %s) = %+v, want the uri %s and %q", uri, tl.Name, c, uri, server+" html "+orig)
		}
		delete(want, tl.Name)
	}
	if len(want) > 0 {
		t.Errorf("tools missing: %v", want)
	}
	if logHas(h, "mcp-bridge://") {
		t.Errorf("a ui:// URI was renamed out of its scheme: %s", h.log.String())
	}
	// A ui:// URI that names no server is not routed to a guess.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://nosuch/dashboard"}); err == nil {
		t.Error("ui://nosuch/dashboard was read")
	}
}

// TestUIRoundTrip: the exposed form of a ui:// URI splits back into the
// server and its URI, for names needing escapes too.
func TestUIRoundTrip(t *testing.T) {
	for _, c := range []struct{ server, uri, exposed string }{
		{"weather", "ui://dashboard", "ui://weather/dashboard"},
		{"a_b-c", "ui://x/y?z=1", "ui://a_b-c/x/y?z=1"},
		{"a b/c:d", "UI://x", "ui://a%20b%2Fc%3Ad/x"},
	} {
		got := uiExposed(c.server, c.uri)
		if got != c.exposed {
			t.Errorf("uiExposed(%q, %q) = %q, want %q", c.server, c.uri, got, c.exposed)
		}
		server, orig, ok := splitUI(got)
		if !ok || server != c.server || !strings.EqualFold(orig[:5], "ui://") || orig[5:] != c.uri[5:] {
			t.Errorf("splitUI(%q) = %q, %q, %v", got, server, orig, ok)
		}
	}
	for _, bad := range []string{"ui://", "ui://noslash", "ui:///x", "ui://%zz/x", "file:///x"} {
		if _, _, ok := splitUI(bad); ok {
			t.Errorf("splitUI(%q) ok", bad)
		}
	}
}

// TestAppsNoPrefix: a NoPrefix server's tools and prompts are exposed and
// callable under their own names, beside a prefixed server's; a bare name
// a prefixed server's name also claims goes to the prefixed one.
func TestAppsNoPrefix(t *testing.T) {
	app := appServer("weather", nil)
	app.srv.AddPrompt(&mcp.Prompt{Name: "brief"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "weather brief"}}}}, nil
	})
	textTool(app.srv, "weather", "news_echo") // the bare name of news's echo
	news := newPipeServer("news", nil)
	textTool(news.srv, "news", "echo")
	ws := app.server("weather")
	ws.NoPrefix = true
	h := newHarness(t, Config{Servers: []Server{ws, news.server("news")}})
	cs := h.connect(nil)
	ctx := ctxT(t)

	got := toolNamesOf(t, cs)
	if want := []string{"legacy", "news_echo", "show", "weather_news_echo", "widget"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "show"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, r); got != "weather:show" {
		t.Errorf("show answered %q", got)
	}
	for name, want := range map[string]string{"news_echo": "news:echo:", "weather_news_echo": "weather:news_echo:"} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, r); got != want {
			t.Errorf("%s answered %q, want %q", name, got, want)
		}
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := p.Messages[0].Content.(*mcp.TextContent); tc == nil || tc.Text != "weather brief" {
		t.Errorf("brief = %+v", p.Messages[0].Content)
	}
	// UI resources keep the server's authority whatever the tool names.
	tools, _ := cs.ListTools(ctx, nil)
	for _, tl := range tools.Tools {
		if tl.Name == "show" && resourceURIOf(t, tl) != "ui://weather/dashboard" {
			t.Errorf("show's resourceUri = %q", resourceURIOf(t, tl))
		}
	}
	if !logHas(h, `"kept_by":"news"`) {
		t.Error("the collision of news_echo was not logged")
	}
}

// TestAppsNoPrefixCollisionAtRunTime: two NoPrefix servers; when the
// second one adds a tool the first exposes bare, the bare name goes to
// neither (each is exposed prefixed, logged) — an app calling it gets an
// error, not the other server's tool — and comes back to the first when
// the second removes its tool.
func TestAppsNoPrefixCollisionAtRunTime(t *testing.T) {
	one := newPipeServer("one", nil)
	textTool(one.srv, "one", "go")
	two := newPipeServer("two", nil)
	textTool(two.srv, "two", "other")
	s1, s2 := one.server("one"), two.server("two")
	s1.NoPrefix, s2.NoPrefix = true, true
	h := newHarness(t, Config{Servers: []Server{s1, s2}})
	cs := h.connect(nil)
	ctx := ctxT(t)

	call := func(name string) (string, bool) {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil || r.IsError {
			return "", false
		}
		return resultText(t, r), true
	}
	if got := toolNamesOf(t, cs); !slices.Equal(got, []string{"go", "other"}) {
		t.Fatalf("tools = %v", got)
	}
	if got, _ := call("go"); got != "one:go:" {
		t.Fatalf("go answered %q", got)
	}

	textTool(two.srv, "two", "go")
	if got := toolNamesOf(t, cs); !slices.Equal(got, []string{"one_go", "other", "two_go"}) {
		t.Fatalf("after two added go: tools = %v", got)
	}
	if got, ok := call("go"); ok {
		t.Errorf("the contested bare go was callable: %q", got)
	}
	for name, want := range map[string]string{"one_go": "one:go:", "two_go": "two:go:"} {
		if got, _ := call(name); got != want {
			t.Errorf("%s answered %q, want %q", name, got, want)
		}
	}
	if !logHas(h, "no server keeps it") || !logHas(h, `"claimed_by":["one","two"]`) {
		t.Errorf("the run-time collision was not logged with both servers: %s", h.log.String())
	}

	two.srv.RemoveTools("go")
	if got := toolNamesOf(t, cs); !slices.Equal(got, []string{"go", "other"}) {
		t.Fatalf("after two removed go: tools = %v", got)
	}
	if got, _ := call("go"); got != "one:go:" {
		t.Errorf("go answered %q after the collision ended", got)
	}
}

func toolNamesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools.Tools, func(t *mcp.Tool) string { return t.Name })
	slices.Sort(got)
	return got
}

// TestAppsExtensions: the aggregate advertises an extension every server
// advertises alike, and MCP Apps (marked per tool) when any server does;
// not one only some servers honour, nor one with differing settings.
func TestAppsExtensions(t *testing.T) {
	a := appServer("a", map[string]any{
		"io.modelcontextprotocol/ui": map[string]any{}, "com.example/both": map[string]any{"v": 1},
		"com.example/only-a": map[string]any{}, "com.example/differs": map[string]any{"v": 1},
	})
	b := newPipeServer("b", &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{
		"com.example/both": map[string]any{"v": 1}, "com.example/differs": map[string]any{"v": 2},
	}}})
	textTool(b.srv, "b", "echo")
	h := newHarness(t, Config{Servers: []Server{a.server("a"), b.server("b")}})
	cs := h.connect(nil)
	got := cs.InitializeResult().Capabilities.Extensions
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range got {
			if !yield(id) {
				return
			}
		}
	})
	if want := []string{"com.example/both", "io.modelcontextprotocol/ui"}; !slices.Equal(ids, want) {
		t.Errorf("extensions = %v, want %v", got, want)
	}
	if v, _ := got["com.example/both"].(map[string]any); v["v"] != float64(1) {
		t.Errorf("com.example/both settings = %v", got["com.example/both"])
	}
	if !logHas(h, `"extension":"com.example/only-a"`) || !logHas(h, `"other_settings":["b"]`) {
		t.Errorf("the left-out extensions were not logged: %s", h.log.String())
	}

	// Servers without extensions: none advertised.
	h2 := newHarness(t, Config{Servers: []Server{newPipeServer("c", nil).server("c")}})
	if ext := h2.connect(nil).InitializeResult().Capabilities.Extensions; len(ext) != 0 {
		t.Errorf("extensions without any server's: %v", ext)
	}
}

// TestAppsExtensionsLateServer: a server joining after initialize was
// answered without an extension the session advertised is logged; the
// session's answer stays what it was.
func TestAppsExtensionsLateServer(t *testing.T) {
	ext := map[string]any{"com.example/x": map[string]any{}}
	a := newPipeServer("a", &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Extensions: ext}})
	textTool(a.srv, "a", "echo")
	b := newPipeServer("b", nil)
	textTool(b.srv, "b", "echo")
	gate := make(chan struct{})
	late := b.server("b")
	dial := late.Dial
	late.Dial = func(ctx context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
		return dial(ctx)
	}
	changed := make(chan struct{}, 8)
	h := newHarness(t, Config{Servers: []Server{a.server("a"), late}, JoinTimeout: time.Second})
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	if _, ok := cs.InitializeResult().Capabilities.Extensions["com.example/x"]; !ok {
		t.Fatalf("extensions = %v", cs.InitializeResult().Capabilities.Extensions)
	}
	close(gate)
	select {
	case <-changed:
	case <-ctxT(t).Done():
		t.Fatal("b never joined")
	}
	if !logHas(h, "joined late without an extension") || !logHas(h, `"extension":"com.example/x"`) {
		t.Errorf("the late server's missing extension was not logged: %s", h.log.String())
	}
}
