package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// 32 clients send the same id and the same progress token at once; each
// must see only its own progress and its own result (supergateway#35,
// #138: one child's output broadcast to every client).
func TestConcurrentClientsSameIDAndToken(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"], "-step-delay", "5ms")
	const clients = 32
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			steps := i + 1 // a distinct total per client makes crossed events visible
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":%d},%s}}`, steps, modernMeta)
			body = strings.Replace(body, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1)
			resp, raw := rawPost(t, b.URL, body, modernHeaders("tools/call", "memo_export_memos"))
			if resp.StatusCode != 200 {
				t.Errorf("client %d: status %d: %s", i, resp.StatusCode, raw)
				return
			}
			msgs := messages(t, resp, raw)
			var progress []float64
			var results int
			for _, m := range msgs {
				switch {
				case m["method"] == "notifications/progress":
					p := m["params"].(map[string]any)
					if p["progressToken"] != "p" || p["total"] != float64(steps) {
						t.Errorf("client %d got someone else's progress: %v", i, p)
					}
					progress = append(progress, p["progress"].(float64))
				case m["id"] != nil:
					results++
					if m["id"] != float64(1) {
						t.Errorf("client %d: response id %v, want 1", i, m["id"])
					}
					if m["result"] == nil {
						t.Errorf("client %d: error response %v", i, m["error"])
					}
				default:
					t.Errorf("client %d: unexpected message %v", i, m)
				}
			}
			if results != 1 || len(progress) != steps {
				t.Errorf("client %d: %d results and %d progress events, want 1 and %d", i, results, len(progress), steps)
			}
		})
	}
	wg.Wait()
}

func TestChildCrashMidCall(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"], "-step-delay", "50ms")
	base := strings.TrimSuffix(b.URL, "/mcp")
	_, raw := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"memo_debug_stats",`+modernMeta+`}}`, modernHeaders("tools/call", "memo_debug_stats"))
	var stats struct {
		Result struct {
			StructuredContent struct{ PID int } `json:"structuredContent"`
		}
	}
	if err := json.Unmarshal(raw, &stats); err != nil || stats.Result.StructuredContent.PID == 0 {
		t.Fatalf("stats: %s (%v)", raw, err)
	}
	pid := stats.Result.StructuredContent.PID

	type outcome struct {
		resp    *http.Response
		body    []byte
		elapsed time.Duration
	}
	done := make(chan outcome, 1)
	killed := make(chan time.Time, 1)
	go func() {
		resp, raw := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},`+strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"progressToken":1,`, 1)+`}}`, modernHeaders("tools/call", "memo_export_memos"))
		done <- outcome{resp: resp, body: raw, elapsed: time.Since(<-killed)}
	}()
	waitFor(t, "the long call to start", func() bool { return b.InFlight() == 1 })
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	killed <- time.Now()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer after the child was killed")
	}
	msgs := messages(t, o.resp, o.body)
	last := msgs[len(msgs)-1]
	if last["id"] != "long" || last["error"] == nil {
		t.Fatalf("last message %v, want an error response for id \"long\"", last)
	}
	// Product requirement: an error within 1 s of the crash (the figure is
	// logged). Tested with a margin for a loaded machine: a bridge that
	// missed the crash would hold the call past the 10 s wait above.
	if o.elapsed > 5*time.Second {
		t.Errorf("error arrived %v after the kill, want < 1s (5 s allowed under load)", o.elapsed)
	}
	t.Logf("error response %v after the child was killed", o.elapsed)

	// /readyz reports the outage until the restarted child answers, and
	// then the next call succeeds.
	sawDown := false
	waitFor(t, "the child to be restarted", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode == 503 {
			sawDown = true
		}
		return resp.StatusCode == 200 && sawDown
	})
	resp, raw := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", ""))
	if resp.StatusCode != 200 || !strings.Contains(string(raw), "memo_list_memos") {
		t.Fatalf("after restart: %d %s", resp.StatusCode, raw)
	}
}

func TestListenSubscriptionIDsRemapped(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"], "-dynamic-tools")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Two clients listen with the same JSON-RPC id.
	type stream struct {
		resp *http.Response
		ch   chan string
	}
	open := func() stream {
		body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
		req := mcpRequest(ctx, http.MethodPost, b.URL, body, modernHeaders("subscriptions/listen", ""))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		s := stream{resp: resp, ch: make(chan string, 10)}
		go readEvents(resp, s.ch)
		return s
	}
	a, c := open(), open()
	defer a.resp.Body.Close()
	defer c.resp.Body.Close()
	for _, s := range []stream{a, c} {
		ack := <-s.ch
		if !strings.Contains(ack, "notifications/subscriptions/acknowledged") || !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":1`) {
			t.Fatalf("first message %s, want the acknowledgement with subscriptionId 1", ack)
		}
	}
	resp, raw := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"memo_toggle_beta",`+modernMeta+`}}`, modernHeaders("tools/call", "memo_toggle_beta"))
	if resp.StatusCode != 200 {
		t.Fatalf("toggle: %d %s", resp.StatusCode, raw)
	}
	for _, s := range []stream{a, c} {
		select {
		case n := <-s.ch:
			if !strings.Contains(n, "notifications/tools/list_changed") || !strings.Contains(n, `"io.modelcontextprotocol/subscriptionId":1`) {
				t.Errorf("got %s, want list_changed tagged with the client's own id 1", n)
			}
		case <-ctx.Done():
			t.Fatal("list_changed not delivered to a listener")
		}
	}
}

// readEvents sends each SSE data payload of resp to ch until the body ends.
func readEvents(resp *http.Response, ch chan<- string) {
	buf := make([]byte, 64<<10)
	var pending string
	for {
		n, err := resp.Body.Read(buf)
		pending += string(buf[:n])
		for {
			i := strings.Index(pending, "\n\n")
			if i < 0 {
				break
			}
			for _, line := range strings.Split(pending[:i], "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					ch <- d
				}
			}
			pending = pending[i+2:]
		}
		if err != nil {
			close(ch)
			return
		}
	}
}
