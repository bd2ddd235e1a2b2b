package hostio

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// testHost runs a Host on pipes: send writes a line to its stdin, next
// reads the next line it wrote to stdout.
type testHost struct {
	t     *testing.T
	h     *Host
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func startTestHost(t *testing.T, cfg Config, hd Handler) *testHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	th := &testHost{t: t, h: New(cfg), in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	go func() {
		err := th.h.Run(context.Background(), inR, outW, hd)
		th.h.Close(context.Background())
		outW.Close()
		th.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			th.lines <- sc.Text()
		}
		close(th.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-th.done; err != nil {
			t.Errorf("Run() = %v", err)
		}
		for range th.lines {
		}
	})
	return th
}

func (th *testHost) send(s string) {
	th.t.Helper()
	if _, err := io.WriteString(th.in, s+"\n"); err != nil {
		th.t.Fatal(err)
	}
}

func (th *testHost) next() map[string]any {
	th.t.Helper()
	select {
	case l := <-th.lines:
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			th.t.Fatalf("stdout line %q: %v", l, err)
		}
		return m
	case <-time.After(10 * time.Second):
		th.t.Fatal("no line within 10s")
		return nil
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// What is not one JSON-RPC message is answered at the host's end (a parse
// error, an Invalid Request, a line too long: under its id when the id can
// be read); a message reaches Handler.Message parsed, a batch
// Handler.Batch as it came.
func TestHostDispatch(t *testing.T) {
	got := make(chan string, 4)
	th := startTestHost(t, Config{MaxMessageSize: 1024}, Handler{
		Message: func(_ context.Context, m *wire.Message) { got <- "message " + m.Method },
		Batch:   func(_ context.Context, raw []byte, _ []wire.Span) { got <- "batch " + string(raw) },
	})
	th.send(`this is not json`)
	if m := th.next(); m["id"] != nil || errCode(m) != wire.CodeParseError {
		t.Errorf("garbage: %v, want %d with id null", m, wire.CodeParseError)
	}
	th.send(`{"jsonrpc":"2.0","x":1}`)
	if m := th.next(); m["id"] != nil || errCode(m) != wire.CodeInvalidRequest {
		t.Errorf("no message: %v, want %d with id null", m, wire.CodeInvalidRequest)
	}
	th.send(`{"jsonrpc":"2.0","id":7,"method":"m","params":{"pad":"` + strings.Repeat("p", 4096) + `"}}`)
	if m := th.next(); m["id"] != float64(7) || errCode(m) != wire.CodeInvalidRequest ||
		!strings.Contains(m["error"].(map[string]any)["message"].(string), "max-message-size") {
		t.Errorf("too long: %v, want an error under id 7 naming --max-message-size", m)
	}
	th.send(` [{"jsonrpc":"2.0","method":"a"}]`)
	if g := <-got; g != `batch  [{"jsonrpc":"2.0","method":"a"}]` {
		t.Errorf("batch: %q", g)
	}
	th.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r")
	if g := <-got; g != "message ping" {
		t.Errorf("CRLF-terminated request: %q", g)
	}
}

// SplitBatch hands each element of a batch on as a line of its own; an
// empty batch is an Invalid Request.
func TestHostSplitBatch(t *testing.T) {
	got := make(chan string, 4)
	var th *testHost
	th = startTestHost(t, Config{}, Handler{
		Message: func(_ context.Context, m *wire.Message) { got <- m.Method },
		Batch:   func(ctx context.Context, raw []byte, elems []wire.Span) { th.h.SplitBatch(ctx, raw, elems) },
	})
	th.send(`[{"jsonrpc":"2.0","method":"a"}, {"jsonrpc":"2.0","id":1,"method":"b"}]`)
	if a, b := <-got, <-got; a != "a" || b != "b" {
		t.Errorf("elements handed on as %q, %q; want a, b", a, b)
	}
	th.send(`[]`)
	if m := th.next(); errCode(m) != wire.CodeInvalidRequest {
		t.Errorf("empty batch: %v", m)
	}
	// A batch inside a batch is an Invalid Request, however deep: nothing
	// is handed on, and each level is not split (and copied) again.
	deep := strings.Repeat("[", 1000) + `{"jsonrpc":"2.0","id":1,"method":"deep"}` + strings.Repeat("]", 1000)
	for _, line := range []string{`[[{"jsonrpc":"2.0","id":1,"method":"nested"}]]`, deep} {
		th.send(line)
		if m := th.next(); errCode(m) != wire.CodeInvalidRequest {
			t.Errorf("batch inside a batch: %v", m)
		}
	}
	th.send(`{"jsonrpc":"2.0","method":"after"}`)
	if m := <-got; m != "after" {
		t.Errorf("an element of a nested batch was handed on: %q", m)
	}
}

// Write keeps every message on one line: a pretty-printed one is
// compacted, one that is not JSON is dropped.
func TestHostWriteOneLine(t *testing.T) {
	var th *testHost
	th = startTestHost(t, Config{}, Handler{
		Message: func(context.Context, *wire.Message) {
			th.h.Write([]byte("{\n\"jsonrpc\": \"2.0\",\n\"method\": \"broken\""))
			th.h.Write([]byte("{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"x\",\n  \"params\": {\"text\": \"a\\nb\"}\n}"))
		},
		Batch: func(context.Context, []byte, []wire.Span) {},
	})
	th.send(`{"jsonrpc":"2.0","method":"go"}`)
	select {
	case l := <-th.lines:
		if l != `{"jsonrpc":"2.0","method":"x","params":{"text":"a\nb"}}` {
			t.Errorf("wrote %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing written")
	}
}

// A request waits for the notifications the host sent before it
// (InOrder), and with hold what comes after waits for the request.
func TestHostOrder(t *testing.T) {
	var (
		mu     sync.Mutex
		events []string
		gate   = make(chan struct{})
		ran    = make(chan string, 8)
	)
	record := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		ran <- e
	}
	var th *testHost
	th = startTestHost(t, Config{}, Handler{
		Message: func(ctx context.Context, m *wire.Message) {
			switch m.Method {
			case "slow":
				th.h.InOrder(ctx, func(context.Context) { <-gate; record("slow") })
			case "init":
				th.h.GoRequest(ctx, true, func() { record("init") })
			case "after":
				th.h.InOrder(ctx, func(context.Context) { record("after") })
			}
		},
		Batch: func(context.Context, []byte, []wire.Span) {},
	})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the host's: a failed test does not hang it
	th.send(`{"jsonrpc":"2.0","method":"slow"}`)
	th.send(`{"jsonrpc":"2.0","id":1,"method":"init"}`)
	th.send(`{"jsonrpc":"2.0","method":"after"}`)
	select {
	case e := <-ran:
		t.Fatalf("%s ran before the notification sent before it", e)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	for range 3 {
		<-ran
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != "slow,init,after" {
		t.Errorf("ran %v, want slow, init, after", events)
	}
}

// The bridge's own log notifications wait for the host's
// notifications/initialized.
func TestHostLogNoticeGated(t *testing.T) {
	var th *testHost
	sent := make(chan bool, 2)
	th = startTestHost(t, Config{}, Handler{
		Message: func(context.Context, *wire.Message) { sent <- th.h.LogNotice("warning", "code 1234") },
		Batch:   func(context.Context, []byte, []wire.Span) {},
	})
	th.send(`{"jsonrpc":"2.0","method":"notifications/other"}`)
	if <-sent {
		t.Error("a notice was sent before notifications/initialized")
	}
	th.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if !<-sent {
		t.Fatal("no notice after notifications/initialized")
	}
	if m := th.next(); m["method"] != "notifications/message" || m["params"].(map[string]any)["data"] != "code 1234" {
		t.Errorf("notice %v", m)
	}
}

// Close waits ShutdownTimeout for what still runs, then cancels it and
// joins it (goleak checks nothing is left).
func TestHostCloseCancelsAfterTimeout(t *testing.T) {
	inR, inW := io.Pipe()
	var log strings.Builder
	h := New(Config{ShutdownTimeout: time.Millisecond, InFlight: func() int { return 1 }, Logger: zerolog.New(&log)})
	started := make(chan struct{})
	hd := Handler{
		Message: func(ctx context.Context, _ *wire.Message) {
			h.Go(func() { close(started); <-ctx.Done() })
		},
		Batch: func(context.Context, []byte, []wire.Span) {},
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(context.Background(), inR, io.Discard, hd) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"wait"}`+"\n")
	<-started
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	h.Close(context.Background()) // gives up after 1ms, then cancels
	if !strings.Contains(log.String(), "abandoning in-flight requests") {
		t.Errorf("no warning for the request abandoned: %q", log.String())
	}
}
