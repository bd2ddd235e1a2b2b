package serve

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The seed article's wire examples, sent exactly as written (pretty-printed
// bodies, the article's headers including its bearer token) through the
// bridge to examples/memos.
func TestSeedWireExamples(t *testing.T) {
	seed := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seeds", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	headers := func(method, name string) map[string]string {
		h := map[string]string{
			"Host":                 "memos.example.com",
			"Authorization":        "Bearer example-token",
			"MCP-Protocol-Version": "2026-07-28",
			"Mcp-Method":           method,
		}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	sameJSON := func(t *testing.T, got, want []byte) {
		t.Helper()
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("response is not JSON: %s", got)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("response\n%s\nwant (the article's)\n%s", got, want)
		}
	}
	cfg := Config{AuthToken: "example-token"}

	t.Run("default dataset", func(t *testing.T) {
		b := startBridge(t, cfg, bins["memos"])
		resp, body := rawPost(t, b.URL, string(seed("discover-1.request.json")), headers("server/discover", ""))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("discover: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		sameJSON(t, body, seed("discover-1.response.json"))

		_, body = rawPost(t, b.URL, string(seed("list-2.request.json")), headers("tools/list", ""))
		var got, want struct {
			Result struct{ Tools []any } `json:"result"`
		}
		json.Unmarshal(body, &got)
		json.Unmarshal(seed("list-2.response.json"), &want)
		if len(got.Result.Tools) < 2 || !reflect.DeepEqual(got.Result.Tools[:2], want.Result.Tools) {
			t.Errorf("tools/list does not start with the article's two tools: %s", body)
		}

		_, body = rawPost(t, b.URL, string(seed("call-3.request.json")), headers("tools/call", "memo_list_memos"))
		sameJSON(t, body, seed("call-3.response.json"))

		_, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memo_unknown_tool","arguments":{},`+modernMeta+`}}`, headers("tools/call", "memo_unknown_tool"))
		sameJSON(t, body, seed("error-4.response.json"))
		_, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"filter":"visibility"},`+modernMeta+`}}`, headers("tools/call", "memo_list_memos"))
		sameJSON(t, body, seed("error-5.response.json"))
	})

	t.Run("empty dataset", func(t *testing.T) {
		b := startBridge(t, cfg, bins["memos"], "-dataset", "empty")
		resp, body := rawPost(t, b.URL, string(seed("call-0.request.json")), headers("tools/call", "memo_list_memos"))
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("a response with no notification before it should be plain JSON, got %s", resp.Header.Get("Content-Type"))
		}
		sameJSON(t, body, seed("call-0.response.json"))

		// The SSE example: a progress event, then the result, byte for byte.
		resp, body = rawPost(t, b.URL, string(seed("call-6.request.json")), headers("tools/call", "memo_list_memos"))
		for k, v := range map[string]string{"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"} {
			if resp.Header.Get(k) != v {
				t.Errorf("%s: %q, want %q", k, resp.Header.Get(k), v)
			}
		}
		if cc := resp.Header.Get("Cache-Control"); !bytes.HasPrefix([]byte(cc), []byte("no-cache")) {
			t.Errorf("Cache-Control %q", cc)
		}
		if want := seed("call-6.response.sse"); !bytes.Equal(body, want) {
			t.Errorf("SSE body\n%s\nwant (the article's)\n%s", body, want)
		}
	})
}
