package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

func testLimits(maxBuffered, perStream int64) *limits {
	cfg := Config{MaxBuffered: maxBuffered, MaxMessageSize: int(perStream)}
	return newLimits(&cfg, zerolog.Nop(), &ratelog.Kinds{})
}

func budgetSink(l *limits, want int) (*sink, *atomic.Int32) {
	s := newSink(want)
	s.lim = l
	var aborts atomic.Int32
	s.setAbort(func() { aborts.Add(1) })
	return s, &aborts
}

// One stream holds one message, or a queue up to --max-message-size; a
// client that lets more pile up loses its stream, not the bridge its
// memory.
func TestSinkPerStreamBound(t *testing.T) {
	l := testLimits(1<<20, 100)
	s, aborts := budgetSink(l, -1)
	if !s.push(make([]byte, 150), false) { // alone, a message always fits
		t.Fatal("first message refused")
	}
	if _, _, overrun := s.take(); overrun {
		t.Fatal("a single message overran the stream")
	}
	// Taken but not written (a blocked write): still held.
	s.push(make([]byte, 10), false)
	if _, _, overrun := s.take(); !overrun || aborts.Load() != 1 {
		t.Fatalf("overrun %v, aborts %d: want the stream cut and its write aborted", overrun, aborts.Load())
	}
	if s.push([]byte("x"), false) {
		t.Error("a cut stream took a message")
	}
}

// Past --max-buffered the stream holding the most is cut, its bytes come
// back to the budget, and new requests are refused while it is spent.
func TestBudgetCutsLargestHolder(t *testing.T) {
	l := testLimits(100, 1000)
	big, bigAborts := budgetSink(l, -1)
	small, smallAborts := budgetSink(l, -1)
	big.push(make([]byte, 60), false)
	msgs, _, _ := big.take() // in a blocked write
	small.push(make([]byte, 30), false)
	if l.spent() {
		t.Fatal("budget spent at 90 of 100 bytes")
	}
	small.push(make([]byte, 20), false) // 110 > 100
	if bigAborts.Load() != 1 || smallAborts.Load() != 0 {
		t.Fatalf("aborts: big %d, small %d; want the largest holder cut", bigAborts.Load(), smallAborts.Load())
	}
	if !l.spent() {
		t.Error("budget not spent while the cut stream's write is still blocked")
	}
	big.drop(msgs) // the aborted write returns
	if l.spent() {
		t.Error("budget still spent after the cut stream let go")
	}
	m, _, overrun := small.take()
	if overrun || len(m) != 2 {
		t.Fatalf("the smaller stream lost its messages: %d, overrun %v", len(m), overrun)
	}
	small.drop(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buffered != 0 || len(l.holding) != 0 {
		t.Errorf("after every message was written: %d bytes held by %d streams, want 0", l.buffered, len(l.holding))
	}
}

// --max-inflight: a request beyond it gets 503 with Retry-After while the
// others run; once they are done, requests are served again.
func TestMaxInflight(t *testing.T) {
	b := startBridge(t, Config{MaxInflight: 1}, bins["memos"], "-step-delay", "50ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},%s}}`,
		strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1))
	req := mcpRequest(ctx, http.MethodPost, b.URL, long, modernHeaders("tools/call", "memo_export_memos"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The first progress event: the call is in flight at the child.
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatalf("long call: %q %v", line, err)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`
	r2, body := rawPost(t, b.URL, list, modernHeaders("tools/list", ""))
	if r2.StatusCode != http.StatusServiceUnavailable || r2.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"id":2`) {
		t.Fatalf("second request over --max-inflight 1: %d %q %s", r2.StatusCode, r2.Header.Get("Retry-After"), body)
	}
	cancel() // the long call is cancelled at the child
	resp.Body.Close()
	waitFor(t, "the cancelled call to leave", func() bool { return b.lim.inflight.Load() == 0 })
	if r3, body := rawPost(t, b.URL, list, modernHeaders("tools/list", "")); r3.StatusCode != 200 {
		t.Errorf("after the long call ended: %d %s", r3.StatusCode, body)
	}
}

// A child that floods its stdout with lines that are not JSON-RPC gets one
// warning per interval, with a count, not one per line.
func TestFloodingChildWarningsSummarized(t *testing.T) {
	const lines = 100000
	// The era probe's siblings flood as well.
	b := startBridge(t, Config{}, "sh", "-c", fmt.Sprintf("yes not-json | head -n %d; exec %s", lines, bins["memos"]))
	// The flood precedes the child's answer to the bridge's discover, so it
	// has been read once the bridge is ready.
	n := strings.Count(b.log.String(), "not a JSON-RPC message")
	t.Logf("%d non-JSON lines from the child: %d warning lines", lines, n)
	if n == 0 || n > 5 {
		t.Errorf("%d warning lines for %d bad lines, want a handful", n, lines)
	}
}

// sinkChild is a childConn whose child swallows everything it is sent.
func sinkChild(t *testing.T, h *Handler) *childConn {
	t.Helper()
	c := newChildConn(&h.ids, h.shared, zerolog.Nop())
	host, err := stdiohost.Start(exec.Command("sh", "-c", "cat >/dev/null"), hostOptions(h, c))
	if err != nil {
		t.Fatal(err)
	}
	c.attach(host)
	t.Cleanup(func() { host.Close() })
	return c
}

// A legacy child asking a modern client for input without end: one call
// keeps at most maxRoundInputs requests open; the rest are refused to the
// child instead of piling up in the bridge.
func TestInputRoundBoundedForLegacyChild(t *testing.T) {
	// Per principal: a child shared by everyone is offered no client
	// capability and may ask nothing at all (TestModernClientsRootsNotShared).
	h, err := New(Config{Command: commandFor("true"), ChildPer: ChildPerPrincipal})
	if err != nil {
		t.Fatal(err)
	}
	c := sinkChild(t, h)
	cl := &call{childID: 1, method: "tools/call", complete: true, sink: h.newSink(1),
		caps: wire.Capabilities{Sampling: json.RawMessage(`{}`)}, origID: []byte("7")}
	c.calls[1] = cl
	for i := range 3 * maxRoundInputs {
		var m wire.Message
		if err := wire.Parse(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{"n":%d}}`, 1000+i, i), &m); err != nil {
			t.Fatal(err)
		}
		h.shared.mrtr.childRequest(c, &m)
	}
	n := cl.round.Open()
	h.shared.mrtr.closeAll()
	if n != maxRoundInputs {
		t.Errorf("%d input requests held for one call, want %d", n, maxRoundInputs)
	}
}

// A 2026-07-28 child whose input_required asks a legacy client for more
// inputs than the bound: the call fails instead of the bridge keeping them.
func TestInputRoundBoundedForModernChild(t *testing.T) {
	h, err := New(Config{Command: commandFor("true")})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: h.sessions, byOrig: map[string]*call{}, log: zerolog.Nop(),
		tr: legacysession.New(nil, 0)}
	cl := &call{origID: []byte("7"), method: "tools/call", sink: h.newSink(1), sess: s}
	s.pending, s.byOrig["7"] = []*call{cl}, cl
	reqs := make([]string, maxRoundInputs+1)
	for i := range reqs {
		reqs[i] = fmt.Sprintf(`"k%d":{"method":"roots/list"}`, i)
	}
	var resp wire.Message
	raw := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{` + strings.Join(reqs, ",") + `}}}`
	if err := wire.Parse([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	s.inputRequired(&resp, []byte(`{}`), []byte("7"), "tools/call", 0)
	msgs, complete, _ := cl.sink.take()
	if s.tr.OpenInputs() != 0 || !complete || len(msgs) != 1 || !strings.Contains(string(msgs[0]), `"error"`) {
		t.Errorf("%d inputs kept, %d messages (complete %v), want none kept and the call failed", s.tr.OpenInputs(), len(msgs), complete)
	}
}

// A legacy session whose client left mid-call is reaped after the idle
// timeout although its call is pending: the call is cancelled toward the
// child, the session answers 404. While a stream is open the session is
// not idle.
func TestIdleSessionReapedWithPendingCall(t *testing.T) {
	stdin := t.TempDir() + "/stdin"
	// 2 s, not 500 ms: the GET stream below must open before the session
	// goes idle, which a loaded machine can miss in 500 ms.
	const idle = 2 * time.Second
	b := startBridge(t, Config{SessionIdleTimeout: idle}, teeCommand(stdin, bins["memos"], "-step-delay", "50ms")...)
	resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)

	// A GET stream keeps the session attached past the idle timeout.
	getCtx, endGet := context.WithCancel(context.Background())
	defer endGet()
	get, _ := http.NewRequestWithContext(getCtx, http.MethodGet, b.URL, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	getResp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer getResp.Body.Close()

	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	req := mcpRequest(ctx, http.MethodPost, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},"_meta":{"progressToken":1}}}`, hdr)
	call, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(call.Body)
	// Progress events for 3 idle timeouts while the GET stream is open.
	deadline := time.Now().Add(3 * idle)
	for time.Now().Before(deadline) {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("call ended while the client was attached: %v", err)
		}
	}
	leave() // the client disconnects mid-call...
	call.Body.Close()
	endGet() // ...and from its GET stream
	left := time.Now()
	waitFor(t, "the abandoned session to be reaped", func() bool { return b.sessions.count() == 0 })
	t.Logf("session with a pending call reaped %v after its client left (idle timeout %v)", time.Since(left).Round(time.Millisecond), idle)
	if r, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, hdr); r.StatusCode != http.StatusNotFound {
		t.Errorf("request on a reaped session: %d %s, want 404", r.StatusCode, body)
	}
	waitFor(t, "the child to be told", func() bool {
		b, _ := os.ReadFile(stdin)
		return strings.Contains(string(b), `"method":"notifications/cancelled"`)
	})
}

// A child's line that is broken past the keys the envelope reader walks
// (a bad literal deep in the result) is dropped whole, not relayed to a
// client whose decoder would fail on it; the call stays pending for the
// child's next, well-formed answer.
func TestChildBrokenJSONDropped(t *testing.T) {
	h, err := New(Config{Command: commandFor("true")})
	if err != nil {
		t.Fatal(err)
	}
	c := sinkChild(t, h)
	cl := &call{childID: 1, method: "tools/call", complete: true, sink: h.newSink(1), origID: []byte("7")}
	c.calls[1] = cl
	c.onMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"ok":tru}}}`))
	if msgs, complete, _ := cl.sink.take(); len(msgs) != 0 || complete {
		t.Fatalf("a broken line reached the client: %q", msgs)
	}
	c.onMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"ok":true}}}`))
	if msgs, complete, _ := cl.sink.take(); len(msgs) != 1 || !complete || !strings.Contains(string(msgs[0]), `"id":7`) {
		t.Fatalf("the well-formed answer: %q complete %v", msgs, complete)
	}
}
