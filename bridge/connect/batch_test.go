package connect

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A 2025-03-26 batch passes through as one POST, and each response of the
// answer reaches the host as its own line.
func TestBatchPassesThroughAsOnePOST(t *testing.T) {
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"prompts/list"}]`
	srv, posted := batchRemote(t)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(batch)
	for _, id := range []float64{1, 2} {
		if m := h.next(10 * time.Second); m["id"] != id || m["result"] == nil {
			t.Fatalf("line %v, want the response to %v on a line of its own", m, id)
		}
	}
	if bodies := posted(); len(bodies) != 1 || bodies[0] != batch {
		t.Errorf("remote got %q, want the batch as one POST, byte for byte", bodies)
	}
}

// batchRemote is a remote that answers every POST with the responses to
// ids 1 (tools/list) and 2 (prompts/list) as one JSON array; posted returns
// the bodies it got.
func batchRemote(t *testing.T) (srv *httptest.Server, posted func() []string) {
	var mu sync.Mutex
	var bodies []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"result":{"tools":[]}},`+"\n"+`{"jsonrpc":"2.0","id":2,"result":{"prompts":[]}}]`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

// A translated session cannot forward a batch (2026-07-28 has none): each
// element is handled on its own and gets its own answer.
func TestBatchSplitWhenTranslating(t *testing.T) {
	rm := &rawModern{change: make(chan string, 4)}
	srv := httptest.NewServer(rm)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolModern})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lh","version":"1"}}}`)
	if init, _ := h.response("0", 10*time.Second); init["result"] == nil {
		t.Fatalf("initialize: %v", init)
	}

	h.send(`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`)
	got := map[float64]map[string]any{}
	for range 2 { // answered concurrently, in either order
		m := h.next(10 * time.Second)
		id, _ := m["id"].(float64)
		got[id] = m
	}
	if got[5]["result"] == nil || got[6]["result"] == nil {
		t.Fatalf("answers %v, want results for 5 and 6", got)
	}
	if n := len(rm.rec.of("tools/list")); n != 1 {
		t.Errorf("remote got %d tools/list, want 1 (the batch element, on its own)", n)
	}

	h.send(`[]`)
	if m := h.next(10 * time.Second); m["id"] != nil || errorMessage(m) == "" {
		t.Errorf("empty batch: %v, want an Invalid Request error with a null id", m)
	}
}
