package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openPost posts body and streams the response's SSE data payloads.
func openPost(t *testing.T, ctx context.Context, url, body string, hdr map[string]string) (*http.Response, chan string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan string, 16)
	go readEvents(resp, ch)
	return resp, ch
}

func next(t *testing.T, ctx context.Context, ch <-chan string) string {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("stream ended early")
		}
		return m
	case <-ctx.Done():
		t.Fatal("no event before the deadline")
	}
	return ""
}

// In shared legacy mode, session B cannot answer a roots/list the child
// sent to session A: not under the child's own id, nor under the id A was
// shown; A's own answer is the one the child gets.
func TestSharedLegacyForeignResponseRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := startBridge(t, Config{SessionMode: SessionShared, ChildProtocol: ChildLegacy, Command: testChild()})
	alice := legacyInitCaps(t, b.URL, "", "2025-11-25", `{"roots":{}}`)
	bob := legacyInit(t, b.URL, "", "2025-11-25")
	_, ch := openPost(t, ctx, b.URL, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask-roots","arguments":{}}}`,
		map[string]string{"Mcp-Session-Id": alice})
	ask := next(t, ctx, ch)
	if !strings.Contains(ask, `"method":"roots/list"`) {
		t.Fatalf("alice got %s, want the child's roots/list", ask)
	}
	if strings.Contains(ask, `"roots-1"`) {
		t.Errorf("alice was shown the child's own request id: %s", ask)
	}
	shownID := ask[strings.Index(ask, `"id":`)+5:]
	shownID = shownID[:strings.IndexAny(shownID, ",}")]
	for _, id := range []string{`"roots-1"`, shownID} {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":`+id+`,"result":{"roots":[{"uri":"file:///home/bob"}]}}`,
			map[string]string{"Mcp-Session-Id": bob})
		if resp.StatusCode != 400 {
			t.Errorf("bob answering alice's request under id %s: %d %s, want 400", id, resp.StatusCode, body)
		}
	}
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":`+shownID+`,"result":{"roots":[{"uri":"file:///home/alice"}]}}`,
		map[string]string{"Mcp-Session-Id": alice})
	if resp.StatusCode != 202 {
		t.Fatalf("alice's answer: %d %s", resp.StatusCode, body)
	}
	res := next(t, ctx, ch)
	if !strings.Contains(res, "/home/alice") || strings.Contains(res, "/home/bob") || !strings.Contains(res, `"id":7`) {
		t.Fatalf("alice's call returned %s, want her own roots", res)
	}
	// The same id answered twice is refused the second time.
	if resp, _ := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":`+shownID+`,"result":{"roots":[]}}`, map[string]string{"Mcp-Session-Id": alice}); resp.StatusCode != 400 {
		t.Errorf("a second answer to the same request: %d, want 400", resp.StatusCode)
	}
}
