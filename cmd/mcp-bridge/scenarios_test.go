package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The scenario table (#22): one set of scenarios, written once against a
// Go SDK client session, run through both faces of the real binary for
// every era pairing:
//
//	serve:   Go SDK HTTP client (era X) → mcp-bridge serve → scenchild over stdio (era Y)
//	connect: Go SDK stdio host (era X) → mcp-bridge connect → scenchild over HTTP (era Y)
//
// scenchild (testdata/scenchild) is the same Go SDK server on both faces.
// A pairing that cannot carry a scenario by design is listed in
// scenarioLimits with its reason; docs/compatibility.md says the same.

const (
	era2025 = "2025-11-25" // sessions: initialize, server→client requests, GET stream
	era2026 = "2026-07-28" // stateless: server/discover, input rounds, subscriptions/listen
)

// scenSession is what a scenario drives: a connected client and what its
// handlers have seen.
type scenSession struct {
	cs *mcp.ClientSession
	ev *scenEvents
}

type scenario struct {
	name string
	run  func(t *testing.T, ctx context.Context, s scenSession)
}

type face struct {
	name  string
	start func(t *testing.T, ctx context.Context, clientEra, serverEra string, ev *scenEvents) *mcp.ClientSession
}

// scenarioLimits names, per "face/client era/server era/scenario", a
// scenario a pairing cannot carry by design, and why. Empty: every pairing
// carries every scenario on both faces.
var scenarioLimits = map[string]string{}

var scenarios = []scenario{
	{"tools", scenTools},
	{"progress", scenProgress},
	{"input-round-two-inputs", scenInputRound},
	{"listen-list-changed", scenListChanged},
	{"cancellation", scenCancellation},
}

var faces = []face{
	{"serve", startServeFace},
	{"connect", startConnectFace},
}

func TestScenarios(t *testing.T) {
	eras := []string{era2025, era2026}
	for _, f := range faces {
		t.Run(f.name, func(t *testing.T) {
			for _, clientEra := range eras {
				for _, serverEra := range eras {
					t.Run("client-"+clientEra+"/server-"+serverEra, func(t *testing.T) {
						t.Parallel()
						ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
						defer cancel()
						ev := newScenEvents()
						cs := f.start(t, ctx, clientEra, serverEra, ev)
						if got := cs.InitializeResult().ProtocolVersion; got != clientEra {
							t.Fatalf("client negotiated %q, want its own era %q", got, clientEra)
						}
						for _, sc := range scenarios {
							t.Run(sc.name, func(t *testing.T) {
								if why, ok := scenarioLimits[strings.Join([]string{f.name, clientEra, serverEra, sc.name}, "/")]; ok {
									t.Skipf("not carried by design: %s", why)
								}
								sc.run(t, ctx, scenSession{cs, ev})
							})
						}
					})
				}
			}
		})
	}
}

// scenchildBin builds the scenario server once, beside the binaries
// TestMain built (and removes).
var scenchildBin = sync.OnceValues(func() (string, error) {
	out := filepath.Join(filepath.Dir(bin["mcp-bridge"]), "scenchild")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	if b, err := exec.Command("go", "build", "-o", out, "./testdata/scenchild").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build scenchild: %v\n%s", err, b)
	}
	return out, nil
})

func scenServerEra(era string) string { return era[:4] } // scenchild's -era flag

func scenClient(ev *scenEvents) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "scenario-client", Version: "1"}, ev.options())
}

// startServeFace: an HTTP client → mcp-bridge serve → scenchild on stdio.
// --child-per principal: a legacy child shared by every modern client is
// told of no client capability (compatibility.md), so input rounds to it
// need a child per principal; the other pairings are unaffected by it.
func startServeFace(t *testing.T, ctx context.Context, clientEra, serverEra string, ev *scenEvents) *mcp.ClientSession {
	child, err := scenchildBin()
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--child-per", "principal", "--", child, "-era", scenServerEra(serverEra))
	waitReady(t, addr)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	cs, err := scenClient(ev).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: clientEra})
	if err != nil {
		t.Fatalf("connect to serve: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startConnectFace: a stdio host → mcp-bridge connect → scenchild on HTTP.
func startConnectFace(t *testing.T, ctx context.Context, clientEra, serverEra string, ev *scenEvents) *mcp.ClientSession {
	child, err := scenchildBin()
	if err != nil {
		t.Fatal(err)
	}
	remote := exec.Command(child, "-era", scenServerEra(serverEra), "-http", "127.0.0.1:0")
	var remoteLog, bridgeLog scenLog
	remote.Stderr = &remoteLog
	stdout, err := remote.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		remote.Process.Kill()
		remote.Wait()
		if t.Failed() {
			t.Logf("scenchild stderr:\n%s\nconnect stderr:\n%s", remoteLog.String(), bridgeLog.String())
		}
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("scenchild did not print its URL: %v", err)
	}
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--log-level", "debug", strings.TrimSpace(url))
	cmd.Stderr = &bridgeLog
	cs, err := scenClient(ev).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: clientEra})
	if err != nil {
		t.Fatalf("connect through mcp-bridge connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type scenLog struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *scenLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.Write(p)
}

func (l *scenLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}

func scenText(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("tool error: %s", sb.String())
	}
	return sb.String()
}

func scenTools(t *testing.T, ctx context.Context, s scenSession) {
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"echo", "progress", "ask2", "grow", "block", "cancelled"} {
		if !names[want] {
			t.Errorf("tools/list lacks %q: %v", want, names)
		}
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if got := scenText(t, res, err); got != "echo: hi" {
		t.Errorf("echo = %q", got)
	}
}

func scenProgress(t *testing.T, ctx context.Context, s scenSession) {
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	p.SetProgressToken("scen-progress")
	res, err := s.cs.CallTool(ctx, p)
	if got := scenText(t, res, err); got != "done" {
		t.Errorf("progress = %q", got)
	}
	s.ev.waitFor(t, 20*time.Second, "3 progress notifications for the call's token", func(e *scenEvents) bool {
		return e.progress["scen-progress"] >= 3
	})
}

// The server asks two things at once — an elicitation and a sampling
// request — as one input round (2026) or two server→client requests (2025).
func scenInputRound(t *testing.T, ctx context.Context, s scenSession) {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask2", Arguments: map[string]any{}})
	if got := scenText(t, res, err); got != "hi from the host, octocat" {
		t.Errorf("ask2 = %q, want both inputs used", got)
	}
	s.ev.mu.Lock()
	el, sm := s.ev.elicit, s.ev.sampling
	s.ev.mu.Unlock()
	if el != 1 || sm != 1 {
		t.Errorf("the client answered %d elicitations and %d sampling requests, want 1 and 1", el, sm)
	}
}

// A 2026-07-28 client opens its subscriptions/listen stream in the
// background after connecting, and a change made before the stream is
// open is not news to it; so grow is called again (up to 5 times) until
// one change is reported.
func scenListChanged(t *testing.T, ctx context.Context, s scenSession) {
	told := false
	for try := 0; try < 5 && !told; try++ {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{}})
		if got := scenText(t, res, err); got != "grown" {
			t.Errorf("grow = %q", got)
		}
		told = s.ev.await(6*time.Second, func(e *scenEvents) bool { return e.listChanged >= 1 })
	}
	if !told {
		t.Fatal("no notifications/tools/list_changed after 5 tool list changes")
	}
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools.Tools {
		found = found || strings.HasPrefix(tool.Name, "extra_")
	}
	if !found {
		t.Error("tools/list after list_changed lacks the new tool")
	}
}

// The client cancels a call the server is running; the server must see
// it (its context ends), and the bridge must carry the next calls.
func scenCancellation(t *testing.T, ctx context.Context, s scenSession) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}}
		p.SetProgressToken("scen-block")
		_, err := s.cs.CallTool(callCtx, p)
		done <- err
	}()
	// block reports progress once it runs at the server: cancel then.
	s.ev.waitFor(t, 20*time.Second, "block running at the server", func(e *scenEvents) bool { return e.progress["scen-block"] >= 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "cancelled", Arguments: map[string]any{}})
	if got := scenText(t, res, err); got != "cancelled: 1" {
		t.Errorf("server saw %q, want cancelled: 1", got)
	}
	res, err = s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
	if got := scenText(t, res, err); got != "echo: after" {
		t.Errorf("echo after cancellation = %q", got)
	}
}

// scenEvents records what the client's handlers saw; waitFor blocks on
// changes (each handler call closes changed), never on a timer alone.
type scenEvents struct {
	mu          sync.Mutex
	progress    map[string]int
	listChanged int
	elicit      int
	sampling    int
	changed     chan struct{}
}

func newScenEvents() *scenEvents {
	return &scenEvents{progress: map[string]int{}, changed: make(chan struct{})}
}

func (e *scenEvents) update(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *scenEvents) waitFor(t *testing.T, d time.Duration, what string, cond func(*scenEvents) bool) {
	t.Helper()
	if !e.await(d, cond) {
		t.Fatalf("no %s within %v", what, d)
	}
}

// await reports whether cond held within d, checking at each change.
func (e *scenEvents) await(d time.Duration, cond func(*scenEvents) bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		ok, ch := cond(e), e.changed
		e.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

func (e *scenEvents) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			tok := fmt.Sprint(req.Params.ProgressToken)
			e.update(func() { e.progress[tok]++ })
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			e.update(func() { e.listChanged++ })
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			e.update(func() { e.elicit++ })
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			e.update(func() { e.sampling++ })
			return &mcp.CreateMessageResult{Role: "assistant", Model: "scenario", Content: &mcp.TextContent{Text: "hi from the host"}}, nil
		},
	}
}
