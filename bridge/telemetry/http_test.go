package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
)

// gaugeLine returns the value text of the first line of a scrape that
// starts with name (and "{" or " ").
func gaugeLine(text, name string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

// TestHTTPObserverRecords: an observed request is counted under the
// principal it was admitted as, an SSE response counts as an open stream
// while it is served, a refusal is counted by status, and the access log
// has one line per request with the status, the bytes and the principal's
// name.
func TestHTTPObserverRecords(t *testing.T) {
	tel, err := New(context.Background(), Options{Side: Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := &HTTPObserver{Scope: tel.Scope("srv"), AccessLog: true, Log: zerolog.New(&logs),
		Principal: func(r *http.Request) (*http.Request, func() string) { return r, func() string { return "alice" } }}
	if !f.On() || (&HTTPObserver{}).On() {
		t.Fatal("On: want true with a Scope, false for the zero value")
	}
	var during string
	f.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/mcp", nil), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Write([]byte("data: x\n\n"))
		during = scrape(t, tel)
	})
	f.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}")), func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
	after := scrape(t, tel)
	if got := gaugeLine(during, "mcp_bridge_open_streams"); got != "1" {
		t.Errorf("open streams while an SSE response is served = %q, want 1", got)
	}
	if got := gaugeLine(after, "mcp_bridge_open_streams"); got != "0" {
		t.Errorf("open streams after = %q, want 0", got)
	}
	if got := gaugeLine(after, "mcp_bridge_rejected_requests_total"); got != "1" {
		t.Errorf("rejected = %q, want 1\n%s", got, after)
	}
	if !strings.Contains(after, `principal="alice"`) {
		t.Errorf("requests are not counted under the principal:\n%s", after)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d access-log lines, want 2:\n%s", len(lines), logs.String())
	}
	var first, second struct {
		Status    int    `json:"status"`
		Principal string `json:"principal"`
		BytesIn   int64  `json:"bytes_in"`
		BytesOut  int64  `json:"bytes_out"`
		Method    string `json:"http_method"`
	}
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first.Status != 200 || first.BytesOut != 9 || first.Principal != "alice" || first.Method != "GET" {
		t.Errorf("SSE request logged as %+v", first)
	}
	if second.Status != 404 || second.BytesIn != 2 {
		t.Errorf("refused request logged as %+v", second)
	}
}

// TestHTTPObserverHandOff: a stream that leaves net/http takes the
// observation along; the request is recorded once, when the stream ends,
// with the stream's bytes and session.
func TestHTTPObserverHandOff(t *testing.T) {
	var logs bytes.Buffer
	f := &HTTPObserver{AccessLog: true, Log: zerolog.New(&logs)}
	var obs stream.Observer
	f.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/mcp", nil), func(w http.ResponseWriter, r *http.Request) {
		obs = w.(stream.Observed).HandOff()
	})
	if logs.Len() != 0 {
		t.Fatalf("a handed-off request was recorded when the handler returned: %s", logs.String())
	}
	obs.SSEOpened()
	obs.Finish(42, "sid-1")
	var line struct {
		Status   int   `json:"status"`
		BytesOut int64 `json:"bytes_out"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line.Status != 200 || line.BytesOut != 42 {
		t.Errorf("handed-off request logged as %+v (%v): %s", line, err, logs.String())
	}
}

// nopWriter is a ResponseWriter that costs nothing itself.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header       { return w.h }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}

// TestHTTPObserverAllocatesNothing: observing a request with metrics on
// (no tracing, no access log) costs no allocation of its own: the
// ObsWriter is pooled and the counters are resolved once.
func TestHTTPObserverAllocatesNothing(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	f := &HTTPObserver{Scope: tel.Scope("")}
	w := nopWriter{http.Header{}}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	body := []byte("{}")
	next := func(w http.ResponseWriter, r *http.Request) { w.Write(body) }
	f.Serve(w, r, next)
	if n := testing.AllocsPerRun(200, func() { f.Serve(w, r, next) }); n != 0 && !raceEnabled {
		t.Errorf("%v allocations per observed request, want 0", n)
	}
}
