package connect

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// (#21 item 5) A remote answer over --max-message-size becomes a JSON-RPC
// error for that request at once: as a JSON body, and as an SSE event on
// a resumable stream (event ids), which must not be resumed into the same
// oversized event again and again.
func TestOversizedRemoteAnswerIsAnError(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("x", 2*limit)
	for _, kind := range []string{"json", "sse"} {
		t.Run(kind, func(t *testing.T) {
			resumed := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					// A resumption replays what followed the priming event.
					select {
					case resumed <- r.Header.Get("Last-Event-ID"):
					default:
					}
					sseStart(w)
					fmt.Fprintf(w, "id: ev-1\nretry: 1000\ndata: %s\n\n", respond("7", `{"resultType":"complete","content":[{"type":"text","text":"`+big+`"}]}`))
					return
				}
				body := readBody(r)
				var m wire.Message
				wire.Parse(body, &m)
				result := `{"resultType":"complete","content":[{"type":"text","text":"` + big + `"}]}`
				if m.Method != "tools/call" {
					result = `{"resultType":"complete"}`
				}
				if kind == "json" || m.Method != "tools/call" {
					answer(w, r, body, result)
					return
				}
				sseStart(w)
				// A priming event (an id, no data) makes the stream
				// resumable, as SEP-1699 servers do.
				fmt.Fprintf(w, "id: ev-0\nretry: 1000\ndata:\n\n")
				fmt.Fprintf(w, "id: ev-1\ndata: %s\n\n", respond(string(m.IDBytes()), result))
				w.(http.Flusher).Flush()
			}))
			defer srv.Close()
			h := startHost(t, Config{URL: srv.URL, MaxMessageSize: limit})
			start := time.Now()
			h.send(modernCall("7", "big"))
			r, _ := h.response("7", 30*time.Second)
			took := time.Since(start)
			if r["error"] == nil || !contains(errorMessage(r), "max-message-size") {
				t.Errorf("answer %.300v, want an error naming --max-message-size", r)
			}
			if took > 5*time.Second {
				t.Errorf("answered after %v, want within 5s", took)
			}
			select {
			case id := <-resumed:
				t.Errorf("the stream was resumed (Last-Event-ID %q) into the same oversized event", id)
			default:
			}
			t.Logf("%s: answered in %v: %s", kind, took.Round(time.Millisecond), errorMessage(r))
		})
	}
}

// (#21 item 5) An oversized host line is answered with an error carrying
// the request's id when the id can be read: near the start (Go and Python
// SDKs) or as the last member (TypeScript SDKs). A response or a
// notification gets the null-id error, as before.
func TestOversizedHostLineAnsweredUnderItsID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, readBody(r), `{"resultType":"complete"}`)
	}))
	defer srv.Close()
	const limit = 64 << 10
	h := startHost(t, Config{URL: srv.URL, MaxMessageSize: limit})
	pad := strings.Repeat("p", 2*limit)
	for _, tc := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + pad + `"},` + meta + `}}`, "11"},
		{`{"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + pad + `"},` + meta + `},"jsonrpc":"2.0","id":"ts-12"}`, `"ts-12"`},
		{`{"method":"tools/call","params":{"arguments":{"pad":"` + pad + `","id":13}},"jsonrpc":"2.0"}`, "null"},
		{`{"jsonrpc":"2.0","id":14,"result":{"pad":"` + pad + `"}}`, "null"},
	} {
		start := time.Now()
		h.send(tc.line)
		m := h.next(10 * time.Second)
		id, _ := json.Marshal(m["id"])
		if string(id) != tc.id || !contains(errorMessage(m), "max-message-size") {
			t.Errorf("oversized line %.60q...: answer %v, want an error with id %s", tc.line, m, tc.id)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("answered after %v", took)
		}
	}
}
