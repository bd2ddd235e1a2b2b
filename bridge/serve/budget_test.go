package serve

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

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
	waitFor(t, "the cancelled call to leave", func() bool { return b.lim.Inflight() == 0 })
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

// A 2026-07-28 child whose input_required asks a legacy client for more
// inputs than the bound: the call fails instead of the bridge keeping them.
func TestInputRoundBoundedForModernChild(t *testing.T) {
	h, err := New(Config{Command: commandFor("true")})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: h.sessions, byOrig: map[string]*child.Call{}, log: zerolog.Nop(),
		tr: legacysession.New(nil, 0)}
	cl := &child.Call{OrigID: []byte("7"), Method: "tools/call", Sink: h.newSink(1), Sess: s}
	s.pending, s.byOrig["7"] = []*child.Call{cl}, cl
	reqs := make([]string, child.MaxRoundInputs+1)
	for i := range reqs {
		reqs[i] = fmt.Sprintf(`"k%d":{"method":"roots/list"}`, i)
	}
	var resp wire.Message
	raw := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{` + strings.Join(reqs, ",") + `}}}`
	if err := wire.Parse([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	s.inputRequired(&resp, []byte(`{}`), []byte("7"), "tools/call", 0)
	msgs, complete := cl.Sink.Drain()
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
