package connect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Helpers for the hand-rolled peers of the translation tests.

// seen is one request a raw server received.
type seen struct {
	method string
	body   string
	header http.Header
}

// recorder keeps what a raw server received.
type recorder struct {
	mu  sync.Mutex
	all []seen
}

func (r *recorder) add(m *wire.Message, body []byte, h http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	method := m.Method
	if m.Kind == wire.KindResponse {
		method = "(response)"
	}
	r.all = append(r.all, seen{method, string(body), h.Clone()})
}

// of returns what arrived for method, in order.
func (r *recorder) of(method string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, s := range r.all {
		if s.method == method {
			out = append(out, s)
		}
	}
	return out
}

// wait waits until n messages of method arrived and returns them.
func (r *recorder) wait(t *testing.T, method string, n int) []seen {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d %s at the remote", n, method), func() bool { return len(r.of(method)) >= n })
	return r.of(method)
}

func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sseSend(w http.ResponseWriter, msg string) {
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
	w.(http.Flusher).Flush()
}

// obj decodes a JSON object for assertions.
func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, s)
	}
	return m
}

// dig walks nested objects: dig(m, "params", "_meta", "x").
func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// expectNothing fails if the bridge writes anything within d.
func (h *host) expectNothing(d time.Duration) {
	h.t.Helper()
	select {
	case l := <-h.lines:
		h.t.Fatalf("unexpected output: %.300s", l)
	case <-time.After(d):
	}
}

// until reads lines until one satisfies ok, returning it and the others.
func (h *host) until(d time.Duration, what string, ok func(m map[string]any) bool) (map[string]any, []map[string]any) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	var others []map[string]any
	for {
		if time.Until(deadline) <= 0 {
			h.t.Fatalf("no %s within %v (saw %v)", what, d, others)
		}
		m := h.next(time.Until(deadline))
		if ok(m) {
			return m, others
		}
		others = append(others, m)
	}
}

func hasPrefix(v any, p string) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, p)
}

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// jsonErr answers with a JSON-RPC error through testmain's helper.
var jsonErr = testmain.JSONErr
