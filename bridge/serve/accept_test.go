package serve

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestAcceptMediaRanges(t *testing.T) {
	for _, tc := range []struct {
		accept    []string
		json, sse bool
	}{
		{nil, false, false},
		{[]string{""}, false, false},
		{[]string{"application/json, text/event-stream"}, true, true},
		{[]string{"*/*"}, true, true},
		{[]string{"text/*"}, false, true},
		{[]string{"application/*, text/*"}, true, true},
		{[]string{"TEXT/Event-Stream", "Application/JSON"}, true, true}, // two header lines, any case
		{[]string{"application/json;q=0.9, text/event-stream;q=0.1"}, true, true},
		{[]string{"application/json, text/event-stream;q=0"}, true, false},
		{[]string{"*/*, text/event-stream; q=0.000"}, true, false},     // the specific type wins
		{[]string{"text/*;q=0, text/event-stream"}, false, true},       // whatever the order
		{[]string{"text/event-stream;q=0.5, text/*;q=0"}, false, true}, //
		{[]string{"text/html, application/xml"}, false, false},
		{[]string{"text/event-streams, application/jsonx"}, false, false},
		{[]string{"*/*;q=0"}, false, false},
		{[]string{"text/event-stream;charset=utf-8;q=1"}, false, true},
	} {
		if got := accepts(tc.accept, "application", "json"); got != tc.json {
			t.Errorf("%q: json %v, want %v", tc.accept, got, tc.json)
		}
		if got := acceptsSSE(tc.accept); got != tc.sse {
			t.Errorf("%q: sse %v, want %v", tc.accept, got, tc.sse)
		}
		if got := acceptsBoth(tc.accept); got != (tc.json && tc.sse) {
			t.Errorf("%q: both %v", tc.accept, got)
		}
	}
}

func TestAcceptAllocatesNothing(t *testing.T) {
	accept := []string{"application/json;q=0.9, text/*;q=0.5", "*/*;q=0.1"}
	if n := testing.AllocsPerRun(100, func() { acceptsBoth(accept) }); n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}

// POST and GET read Accept alike (issue 21): text/* admits the event
// stream for both, a missing Accept is 406 for both, and Accept may come as
// two header lines.
func TestAcceptPostAndGetAgree(t *testing.T) {
	b := startBridge(t, Config{Command: testChild()})
	sid := legacyInit(t, b.URL, "", "2025-06-18")
	status := func(method string, accept []string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		body := ""
		if method == http.MethodPost {
			body = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		}
		req := mcpRequest(ctx, method, b.URL, body, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
		req.Header.Del("Accept")
		for _, a := range accept {
			req.Header.Add("Accept", a)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %q: %v", method, accept, err)
		}
		resp.Body.Close() // a GET stream: its headers are the answer
		return resp.StatusCode
	}
	for _, tc := range []struct {
		accept    []string
		post, get int
	}{
		{nil, 406, 406},
		{[]string{"application/json, text/*"}, 200, 200},
		{[]string{"application/json", "text/event-stream"}, 200, 200},
		{[]string{"*/*"}, 200, 200},
		{[]string{"application/json, text/event-stream;q=0"}, 406, 406},
		{[]string{"application/json"}, 406, 406},
	} {
		if got := status(http.MethodPost, tc.accept); got != tc.post {
			t.Errorf("POST with Accept %q: %d, want %d", tc.accept, got, tc.post)
		}
		if got := status(http.MethodGet, tc.accept); got != tc.get {
			t.Errorf("GET with Accept %q: %d, want %d", tc.accept, got, tc.get)
		}
	}
}
