package serve

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// postWithin sends body and returns the JSON-RPC messages of the answer,
// failing the test if the answer is not complete within d.
func postWithin(t *testing.T, d time.Duration, url, body string, hdr map[string]string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	resp, err := http.DefaultClient.Do(mcpRequest(ctx, http.MethodPost, url, body, hdr))
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer not complete within %v: %v", d, err)
	}
	t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
	return messages(t, resp, b)
}

// Every request gets an answer: a child answer over --max-message-size
// becomes a JSON-RPC error for that request at once (issue 21, item 5),
// whichever end of the line the child wrote the id at, for a 2026-07-28
// request and in a 2025 session; the child goes on serving.
func TestOversizedAnswerGetsError(t *testing.T) {
	const limit = 64 << 10
	b := startBridge(t, Config{Command: testChild(), MaxMessageSize: limit})
	call := func(id, order string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"big","arguments":{"size":200000,"order":"` + order + `"}`
	}
	check := func(t *testing.T, msgs []map[string]any, id any) {
		t.Helper()
		last := msgs[len(msgs)-1]
		e, _ := last["error"].(map[string]any)
		if last["id"] != id || e == nil || e["code"] != float64(-32603) || !strings.Contains(e["message"].(string), "--max-message-size") {
			t.Fatalf("answer %v, want a -32603 error for id %v naming --max-message-size", last, id)
		}
	}
	for _, order := range []string{"go", "ts"} {
		t.Run("modern/"+order, func(t *testing.T) {
			msgs := postWithin(t, 5*time.Second, b.URL, call(`"m-1"`, order)+`,`+modernMeta+`}}`, modernHeaders("tools/call", "big"))
			check(t, msgs, "m-1")
			if got := modernCall(t, b.URL, "", "env"); got == "" {
				t.Error("the next call got no answer")
			}
		})
		t.Run("legacy/"+order, func(t *testing.T) {
			sid := legacyInit(t, b.URL, "", "2025-06-18")
			hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
			check(t, postWithin(t, 5*time.Second, b.URL, call("7", order)+`}}`, hdr), float64(7))
			msgs := postWithin(t, 5*time.Second, b.URL, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, hdr)
			if last := msgs[len(msgs)-1]; last["result"] == nil {
				t.Errorf("the session's next request: %v", last)
			}
		})
	}
	if logs := b.log.String(); !strings.Contains(logs, "child answer over --max-message-size") {
		t.Errorf("no warning about the oversized answer:\n%s", logs)
	}
}

// The child's own request over the limit is answered to the child with an
// error (it would otherwise wait for it for ever); an answer whose id
// cannot be read fails no request in its place: the warning says so, and
// the request waits for its own deadline.
func TestOversizedChildMessages(t *testing.T) {
	const limit = 64 << 10
	b := startBridge(t, Config{Command: testChild(), MaxMessageSize: limit})
	msgs := postWithin(t, 5*time.Second, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big-ask","arguments":{"size":200000},`+modernMeta+`}}`,
		modernHeaders("tools/call", "big-ask"))
	if text := resultText(t, msgs[len(msgs)-1]); !strings.Contains(text, "error: ") || !strings.Contains(text, "--max-message-size") {
		t.Errorf("the child was answered %q, want an error naming --max-message-size", text)
	}

	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan string, 1)
	go func() {
		req := mcpRequest(ctx, http.MethodPost, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"size":200000,"order":"hidden"},`+modernMeta+`}}`,
			modernHeaders("tools/call", "big"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- ""
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(body)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.log.String(), "no request answered for it"); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for the unreadable answer:\n%s", b.log.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the log, not syncing goroutines
	}
	if n := b.InFlight(); n != 1 {
		t.Errorf("%d requests in flight after the unreadable answer, want 1 (still waiting)", n)
	}
	cancel()
	if body := <-answered; strings.Contains(body, `"error"`) {
		t.Errorf("an answer whose id is unreadable failed a request: %s", body)
	}
	if !strings.Contains(b.log.String(), `"id_read":false`) {
		t.Errorf("the warning does not say the id was unreadable")
	}
	if got := modernCall(t, b.URL, "", "env"); got == "" {
		t.Error("the next call got no answer")
	}
}

// The same with a real server (examples/memos, written with the Go SDK's
// message order): a page of memos over the limit is an error at once, a
// small page is served.
func TestOversizedAnswerRealServer(t *testing.T) {
	b := startBridge(t, Config{MaxMessageSize: 1536}, bins["memos"])
	list := func(id string, size int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":` + strconv.Itoa(size) + `}`
	}
	msgs := postWithin(t, 5*time.Second, b.URL, list(`"big"`, 100)+`,`+modernMeta+`}}`, modernHeaders("tools/call", "memo_list_memos"))
	if last := msgs[len(msgs)-1]; last["id"] != "big" || last["error"] == nil {
		t.Errorf("a page over the limit: %v", last)
	}
	msgs = postWithin(t, 5*time.Second, b.URL, list(`"small"`, 1)+`,`+modernMeta+`}}`, modernHeaders("tools/call", "memo_list_memos"))
	if last := msgs[len(msgs)-1]; last["id"] != "small" || last["result"] == nil {
		t.Errorf("a small page: %v", last)
	}
	sid := legacyInit(t, b.URL, "", "2025-11-25")
	msgs = postWithin(t, 5*time.Second, b.URL, list("3", 100)+`}}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if last := msgs[len(msgs)-1]; last["id"] != float64(3) || last["error"] == nil {
		t.Errorf("a page over the limit in a 2025 session: %v", last)
	}
}
