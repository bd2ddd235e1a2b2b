package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openPost posts body and streams the response's SSE data payloads.
func openPost(t *testing.T, ctx context.Context, url, body string, hdr map[string]string) (*http.Response, chan string) {
	t.Helper()
	req := mcpRequest(ctx, http.MethodPost, url, body, hdr)
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
		if m == "" {
			return next(t, ctx, ch) // a priming event
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

// rootsCall runs get-roots as a modern client that declares roots and,
// when the child asks (input_required), answers with its own root.
func rootsCall(t *testing.T, url, token, who string) string {
	t.Helper()
	meta := strings.Replace(modernMeta, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"roots":{}}`, 1)
	hdr := modernHeaders("tools/call", "get-roots")
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	extra := ""
	for round := 0; round < 3; round++ {
		resp, body := rawPost(t, url, `{"jsonrpc":"2.0","id":`+fmt.Sprint(round+1)+`,"method":"tools/call","params":{"name":"get-roots","arguments":{}`+extra+`,`+meta+`}}`, hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: get-roots: %d %s", who, resp.StatusCode, body)
		}
		msgs := messages(t, resp, body)
		res, _ := msgs[len(msgs)-1]["result"].(map[string]any)
		if res["resultType"] != "input_required" {
			return resultText(t, msgs[len(msgs)-1])
		}
		reqs, _ := res["inputRequests"].(map[string]any)
		answers := map[string]any{}
		for k, v := range reqs {
			if m, _ := v.(map[string]any); m["method"] != "roots/list" {
				t.Fatalf("%s: asked %v", who, v)
			}
			answers[k] = map[string]any{"roots": []any{map[string]any{"uri": "file:///home/" + who, "name": who}}}
		}
		a, _ := json.Marshal(answers)
		s, _ := json.Marshal(res["requestState"])
		extra = `,"inputResponses":` + string(a) + `,"requestState":` + string(s)
	}
	t.Fatalf("%s: input_required without end", who)
	return ""
}

// Two modern clients in front of a legacy-only child that caches the roots
// it asked for per connection (as server-everything's get-roots-list
// does): the second never sees the first one's roots. Shared, the child is
// told of no roots capability at all; with a child per principal, each
// token's child asks its own client.
func TestModernClientsRootsNotShared(t *testing.T) {
	t.Run("shared", func(t *testing.T) {
		b := startBridge(t, Config{Command: testChild()})
		if got := rootsCall(t, b.URL, "", "alice"); got != "no roots capability" {
			t.Errorf("alice through a shared child: %q, want the child not offered roots", got)
		}
		if got := rootsCall(t, b.URL, "", "bob"); strings.Contains(got, "alice") || got != "no roots capability" {
			t.Errorf("bob: %q", got)
		}
		// A child that asks anyway is refused: no client sees the request.
		if got := modernCall(t, b.URL, "", "ask-roots"); !strings.Contains(got, "clients of a shared child take no roots/list") {
			t.Errorf("a shared child's unoffered roots/list: %q, want the bridge's refusal", got)
		}
	})
	t.Run("principal", func(t *testing.T) {
		b := startBridge(t, Config{Command: testChild(), ChildPer: ChildPerPrincipal, AuthTokens: []string{"tok-alice", "tok-bob"}})
		if got := rootsCall(t, b.URL, "tok-alice", "alice"); !strings.Contains(got, "file:///home/alice") {
			t.Errorf("alice: %q, want her roots", got)
		}
		if got := rootsCall(t, b.URL, "tok-bob", "bob"); strings.Contains(got, "alice") || !strings.Contains(got, "file:///home/bob") {
			t.Errorf("bob: %q, want his own roots", got)
		}
		// alice's child still holds hers (cached: no new round).
		if got := rootsCall(t, b.URL, "tok-alice", "carol"); !strings.Contains(got, "file:///home/alice") {
			t.Errorf("alice again: %q", got)
		}
		if !strings.Contains(b.log.String(), "started a child for a new principal") {
			t.Error("no second child was started")
		}
		if strings.Contains(b.log.String(), "tok-alice") || strings.Contains(b.log.String(), "tok-bob") {
			t.Error("a token was logged")
		}
	})
}

// The same through a 2025-03-26 batch: responses in it that answer no
// request of the sending session are dropped.
func TestSharedLegacyForeignBatchedResponseDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := startBridge(t, Config{SessionMode: SessionShared, ChildProtocol: ChildLegacy, Command: testChild()})
	alice := legacyInitCaps(t, b.URL, "", "2025-03-26", `{"roots":{}}`)
	bob := legacyInit(t, b.URL, "", "2025-03-26")
	_, ch := openPost(t, ctx, b.URL, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask-roots","arguments":{}}}`,
		map[string]string{"Mcp-Session-Id": alice})
	ask := next(t, ctx, ch)
	shownID := ask[strings.Index(ask, `"id":`)+5:]
	shownID = shownID[:strings.IndexAny(shownID, ",}")]
	bobs := `{"roots":[{"uri":"file:///home/bob"}]}`
	resp, body := rawPost(t, b.URL, `[{"jsonrpc":"2.0","id":"roots-1","result":`+bobs+`},{"jsonrpc":"2.0","id":`+shownID+`,"result":`+bobs+`}]`,
		map[string]string{"Mcp-Session-Id": bob})
	if resp.StatusCode != 202 {
		t.Fatalf("bob's batch: %d %s", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, b.URL, `[{"jsonrpc":"2.0","id":`+shownID+`,"result":{"roots":[{"uri":"file:///home/alice"}]}}]`,
		map[string]string{"Mcp-Session-Id": alice}); resp.StatusCode != 202 {
		t.Fatalf("alice's batch: %d %s", resp.StatusCode, body)
	}
	if res := next(t, ctx, ch); !strings.Contains(res, "/home/alice") || strings.Contains(res, "/home/bob") {
		t.Fatalf("alice's call returned %s, want her own roots", res)
	}
}
