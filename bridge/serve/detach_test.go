package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// A progress stream that waits leaves net/http and still ends as a valid
// HTTP/1.1 response: every progress event and the result, the chunked body
// terminated, and Connection: close.
func TestDetachedStreamCompletes(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"], "-step-delay", "30ms")
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":3},` +
		strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1) + `}}`
	resp, body := rawPost(t, b.URL, call, modernHeaders("tools/call", "memo_export_memos"))
	if resp.StatusCode != 200 || !resp.Close || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Connection: close %v, Content-Type %q", resp.StatusCode, resp.Close, resp.Header.Get("Content-Type"))
	}
	if n := strings.Count(string(body), "notifications/progress"); n != 3 || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("%d progress events (want 3) and the result in %q", n, body)
	}
	if b.streams.DetachedTotal() == 0 {
		t.Fatal("the stream never left net/http")
	}
	waitFor(t, "the detached stream to end", func() bool { return b.streams.Detached() == 0 })
}

// A call that asked for progress leaves net/http at its first wait, before
// its response is decided; when the result comes alone it is still a JSON
// response, written by the detached stream with its own head.
func TestDetachedBeforeDecided(t *testing.T) {
	b := startBridge(t, Config{Command: testChild()})
	withToken := strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1)
	type answer struct {
		resp *http.Response
		body []byte
	}
	held := make(chan answer, 1)
	go func() {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hold","arguments":{},`+withToken+`}}`,
			modernHeaders("tools/call", "hold"))
		held <- answer{resp, body}
	}()
	waitFor(t, "the held call to leave net/http", func() bool { return b.streams.Detached() == 1 })
	// A graceful stop waits for it (http.Server.Shutdown does not).
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.WaitDetached(expired); err == nil {
		t.Fatal("WaitDetached returned with a detached stream open")
	}
	if resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"release","arguments":{},`+modernMeta+`}}`,
		modernHeaders("tools/call", "release")); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("release: %d (Connection: close %v) %s", resp.StatusCode, resp.Close, body)
	}
	a := <-held
	if a.resp.StatusCode != 200 || a.resp.Header.Get("Content-Type") != "application/json" || !a.resp.Close ||
		a.resp.ContentLength != int64(len(a.body)) || !strings.Contains(string(a.body), `"id":"h"`) || !strings.Contains(string(a.body), "released") {
		t.Fatalf("held call: %d %v (Connection: close %v, Content-Length %d) %s", a.resp.StatusCode, a.resp.Header, a.resp.Close, a.resp.ContentLength, a.body)
	}
	if err := b.WaitDetached(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The cost of an open stream is structural: once it waits, no net/http
// connection goroutine, background reader or buffer is left for it, only
// its writer goroutine (and, where there is no epoll, a reader of its
// connection). The
// bytes a stream holds (live heap and stacks, the raw test client's side
// included) are logged, and bounded well below the ~26 KiB a stream held
// inside net/http.
func TestDetachedStreamCost(t *testing.T) {
	const n = 200
	heap, stack := streamCost(t, n)
	if raceEnabled {
		return
	}
	if heap+stack > 14<<10 {
		t.Errorf("%d bytes of heap and stack per open stream, want at most %d", heap+stack, 14<<10)
	}
	// A waiting progress stream holds no goroutine (stream/evstream.go): no
	// stack. (With a goroutine that writes in place, 4 KiB: its first
	// write grows it for good; with writers doing its writes, 2 KiB.)
	if stack > 1<<10 {
		t.Errorf("%d bytes of goroutine stack per waiting stream, want at most %d", stack, 1<<10)
	}
}

// BenchmarkStreamCost reports the bytes and goroutines an open, waiting
// progress stream costs (go test -run '^$' -bench StreamCost ./bridge/serve/).
func BenchmarkStreamCost(b *testing.B) {
	for range b.N {
		heap, stack := streamCost(b, 1000)
		b.ReportMetric(float64(heap+stack), "B/stream")
	}
}

// streamCost opens n progress streams from raw TCP clients (which cost a
// socket each and no goroutine), waits until every one is detached, checks
// the goroutines that serve them and returns the heap and stack bytes per
// stream.
func streamCost(tb testing.TB, n int) (heap, stack int64) {
	br, err := New(Config{Command: testChild(), MaxInflight: n + 10, Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	br.Start()
	srv := httptest.NewServer(br)
	tb.Cleanup(func() {
		br.BeginShutdown()
		srv.CloseClientConnections()
		br.Close()
		srv.Close()
	})
	waitForTB(tb, "the bridge to be ready", func() bool {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	u, err := url.Parse(srv.URL + br.cfg.path())
	if err != nil {
		tb.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress-wait","arguments":{},` +
		strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1) + `}}`
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: progress-wait\r\nContent-Length: %d\r\n\r\n%s",
		u.Path, u.Host, len(call), call)
	before := liveBytes()
	goBefore := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	buf := make([]byte, 4096)
	for range n {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, req); err != nil {
			tb.Fatal(err)
		}
		// Up to the first progress event: the stream is SSE and waits.
		var got []byte
		for !bytes.Contains(got, []byte("notifications/progress")) {
			k, err := c.Read(buf)
			if err != nil {
				tb.Fatalf("stream %d: %v after %q", len(conns), err, got)
			}
			got = append(got, buf[:k]...)
		}
		if !bytes.Contains(got, []byte("Connection: close")) {
			tb.Fatalf("the SSE response does not say Connection: close: %q", got)
		}
	}
	return detachedCost(tb, br, n, before, goBefore, 0) // served by events
}

// detachedCost waits until n streams opened since before are detached,
// checks the goroutines that serve them (none of net/http's; waiters
// goroutines waiting for the streams' events: one a stream that ends on a
// channel, none for one served by events; the hangup watcher's readers on
// Linux) and returns their heap and stack bytes per stream.
func detachedCost(tb testing.TB, br *Handler, n int, before memUse, goBefore int, waiters int) (heap, stack int64) {
	tb.Helper()
	waitForTB(tb, "every stream to be detached", func() bool { return br.streams.Detached() == n })
	after := liveBytes()
	heap, stack = (after.heap-before.heap)/int64(n), (after.stack-before.stack)/int64(n)
	per := heap + stack

	census := map[string]int{}
	stacks := make([]byte, 64<<20)
	stacks = stacks[:runtime.Stack(stacks, true)]
	for _, g := range strings.Split(string(stacks), "\n\n") {
		for _, fn := range []string{"net/http.(*conn).serve", "net/http.(*connReader).backgroundRead", "bridge/stream.(*rawStream).read", "bridge/stream.(*Engine).PumpDetachable.func"} {
			if strings.Contains(g, fn) {
				census[fn]++
			}
		}
		if strings.Contains(g, "net/http.(*conn).serve") && strings.Contains(g, "bridge/stream.pump(") {
			census["stream waiting in its handler"]++
		}
	}
	tb.Logf("%d open streams: %d bytes each (heap %d, stacks %d), %.2f goroutines each (both sides), goroutines by kind %v",
		n, per, heap, stack, float64(runtime.NumGoroutine()-goBefore)/float64(n), census)
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(float64(census["bridge/stream.(*rawStream).read"]+census["bridge/stream.(*Engine).PumpDetachable.func"])/float64(n), "goroutines/stream")
	}
	if census["stream waiting in its handler"] != 0 || census["net/http.(*conn).serve"] > 2 || census["net/http.(*connReader).backgroundRead"] > 2 {
		tb.Errorf("net/http still serves the waiting streams: %v", census)
	}
	// On Linux one epoll watcher learns of every client's hangup; elsewhere
	// each stream reads its own connection.
	readers := n
	if runtime.GOOS == "linux" {
		readers = 0
	}
	if census["bridge/stream.(*rawStream).read"] != readers || census["bridge/stream.(*Engine).PumpDetachable.func"] != waiters {
		tb.Errorf("want %d waiting goroutines and %d readers: %v", waiters, readers, census)
	}
	return heap, stack
}

// memUse is the live heap and the goroutine stacks, after a GC.
type memUse struct{ heap, stack int64 }

func liveBytes() memUse {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memUse{int64(m.HeapAlloc), int64(m.StackInuse)}
}

// waitForTB is waitFor for tests and benchmarks: it polls cond (state the
// bridge exposes, not goroutines to synchronize with).
func waitForTB(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A 2025 session's standalone GET stream leaves net/http while it waits,
// like a 2026-07-28 progress stream: it is detached, still carries the
// session's notifications, keeps the session attached (the reaper must not
// take a session whose client listens), and is counted in the open-streams
// gauge until the client goes away.
func TestLegacyGetStreamDetached(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tel, err := telemetry.New(ctx, telemetry.Options{Side: telemetry.Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, Config{Telemetry: tel}, bins["memos"], "-modern=false", "-dynamic-tools")
	sid := legacyInit(t, b.URL, "", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	gctx, gcancel := context.WithCancel(ctx)
	resp, ch := openSSE(t, gctx, http.MethodGet, b.URL, "", hdr)
	if resp.Header.Get("Connection") != "close" && !resp.Close {
		t.Errorf("a detachable GET stream should say Connection: close")
	}
	<-ch // priming event
	waitFor(t, "the GET stream to detach", func() bool { return b.streams.Detached() == 1 })
	s := b.sessions.lookup(sid)
	attached := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.attached
	}
	// The handler returns after the stream left it; its request's
	// attachment goes then, the stream's own stays.
	waitFor(t, "the session to keep only the stream's attachment", func() bool { return attached() == 1 })
	if v, _ := sample(scrape(t, tel), "mcp_bridge_open_streams"); v != 1 {
		t.Errorf("open streams with one detached GET stream: %v, want 1", v)
	}
	if r, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_toggle_beta","arguments":{}}}`, hdr); r.StatusCode != 200 {
		t.Fatalf("toggle: %d %s", r.StatusCode, body)
	}
	if ev := <-ch; !strings.Contains(ev.data, "notifications/tools/list_changed") {
		t.Fatalf("the detached GET stream carried %+v, want list_changed", ev)
	}
	gcancel()
	waitFor(t, "the detached stream to end", func() bool { return b.streams.Detached() == 0 })
	waitFor(t, "the attachment to be released", func() bool { return attached() == 0 })
	if v, _ := sample(scrape(t, tel), "mcp_bridge_open_streams"); v != 0 {
		t.Errorf("open streams after the client left: %v, want 0", v)
	}
}

// A 2025 client's standalone GET stream, waiting, costs what a detached
// progress stream does: n sessions (one shared child), each with an open
// GET stream from a raw TCP client; none is served by net/http.
func TestDetachedGetStreamCost(t *testing.T) {
	const n = 100
	br, err := New(Config{Command: commandFor(bins["memos"], "-modern=false"), SessionMode: SessionShared, MaxSessions: n + 10, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	br.Start()
	url := httptestServer(t, br) + br.cfg.path()
	waitReady(t, strings.TrimSuffix(url, br.cfg.path()))
	sids := make([]string, n)
	for i := range sids {
		sids[i] = legacyInit(t, url, "", "2025-11-25")
	}
	host := strings.TrimPrefix(strings.TrimSuffix(url, br.cfg.path()), "http://")
	before := liveBytes()
	goBefore := runtime.NumGoroutine()
	buf := make([]byte, 4096)
	for _, sid := range sids {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n", br.cfg.path(), host, sid)
		// Up to the priming event: the stream is open and waits.
		var got []byte
		for !bytes.Contains(got, []byte("retry: ")) {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("GET stream: %v after %q", err, got)
			}
			got = append(got, buf[:k]...)
		}
	}
	heap, stack := detachedCost(t, br, n, before, goBefore, n) // a GET stream ends with its session
	if per := heap + stack; !raceEnabled && per > 14<<10 {
		t.Errorf("%d bytes of heap and stack per open GET stream, want at most %d", per, 14<<10)
	}
}

// A progress call's stream leaves net/http at its first wait; the request's
// observation is finished by the stream when it ends, not by the handler
// that returned: the duration histogram, the span and the access-log line
// cover the whole call, and bytes_out is what the client received.
func TestDetachedStreamObservedWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tel, err := telemetry.New(ctx, telemetry.Options{Side: telemetry.Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	const steps, delay = 4, 50 * time.Millisecond
	b := startBridge(t, Config{Telemetry: tel, AccessLog: true}, bins["memos"], "-step-delay", delay.String())
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":4},` +
		strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1) + `}}`
	resp, body := rawPost(t, b.URL, call, modernHeaders("tools/call", "memo_export_memos"))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) || b.streams.DetachedTotal() != 1 {
		t.Fatalf("progress call: %d, detached %d: %s", resp.StatusCode, b.streams.DetachedTotal(), body)
	}
	waitFor(t, "the stream's access-log line", func() bool { return strings.Contains(b.log.String(), `"tool":"memo_export_memos"`) })
	var line struct {
		TookMS   int64 `json:"took_ms"`
		BytesOut int64 `json:"bytes_out"`
		Status   int   `json:"status"`
	}
	for _, l := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(l, `"tool":"memo_export_memos"`) && strings.Contains(l, `"message":"request"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	whole := steps * delay
	if time.Duration(line.TookMS)*time.Millisecond < whole*3/4 || line.Status != 200 {
		t.Errorf("access log: took_ms %d status %d; the call took at least %v", line.TookMS, line.Status, whole)
	}
	// The body as read holds the chunk framing's payload only; the bytes
	// sent also count the head and the chunk headers.
	if line.BytesOut < int64(len(body)) {
		t.Errorf("access log: bytes_out %d, the client received a %d-byte body", line.BytesOut, len(body))
	}
	sum, _ := sample(scrape(t, tel), "mcp_server_operation_duration_seconds_sum", `mcp_method_name="tools/call"`)
	if time.Duration(sum*float64(time.Second)) < whole*3/4 {
		t.Errorf("the duration histogram recorded %.3f s for a call of at least %v", sum, whole)
	}
	t.Logf("a %d-step progress call (%v of steps): took_ms %d, histogram %.3f s, bytes_out %d for a %d-byte body", steps, whole, line.TookMS, sum, line.BytesOut, len(body))
}

// A 2025 session's call that asked for progress leaves net/http at its
// first wait too: its SSE stream carries every progress event and the
// result (event ids of the session's replay log included), says
// Connection: close, keeps the session attached while it waits, and its
// access-log line covers the whole call.
func TestLegacyProgressStreamDetached(t *testing.T) {
	const steps, delay = 4, 50 * time.Millisecond
	b := startBridge(t, Config{AccessLog: true}, bins["memos"], "-modern=false", "-step-delay", delay.String())
	sid := legacyInit(t, b.URL, "", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	before := b.streams.DetachedTotal()
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":4},"_meta":{"progressToken":"p"}}}`, hdr)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !resp.Close {
		t.Fatalf("progress call: %d %q close=%v", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Close)
	}
	if n := b.streams.DetachedTotal() - before; n != 1 {
		t.Errorf("%d streams detached, want the progress call's", n)
	}
	if got := strings.Count(string(body), "notifications/progress"); got != steps || !strings.Contains(string(body), `"id":5,"result"`) {
		t.Fatalf("stream: %d progress events (want %d) and the result?\n%s", got, steps, body)
	}
	if !strings.Contains(string(body), "\nid: ") && !strings.HasPrefix(string(body), "id: ") {
		t.Errorf("the events carry no ids of the replay log:\n%s", body)
	}
	waitFor(t, "the call's access-log line", func() bool { return strings.Contains(b.log.String(), `"tool":"memo_export_memos"`) })
	for _, l := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(l, `"tool":"memo_export_memos"`) && strings.Contains(l, `"message":"request"`) {
			var line struct {
				TookMS int64 `json:"took_ms"`
			}
			json.Unmarshal([]byte(l), &line)
			if time.Duration(line.TookMS)*time.Millisecond < steps*delay*3/4 {
				t.Errorf("access log took_ms %d for a call of at least %v", line.TookMS, steps*delay)
			}
		}
	}
	s := b.sessions.lookup(sid)
	waitFor(t, "the stream's attachment to the session to go", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.attached == 0
	})
}
