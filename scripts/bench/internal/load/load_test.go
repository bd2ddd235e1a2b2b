//go:build linux

package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/echoproto"
)

func TestScanTop(t *testing.T) {
	msg := []byte(` {"jsonrpc":"2.0", "id" : 7, "result":{"content":[{"type":"text","text":"a\"b\\\\"}],"x":[1,{"y":"}"}]},"z":null}`)
	top, err := scanTop(msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(top.get(msg, top.id)); got != "7" {
		t.Errorf("id = %q", got)
	}
	var v any
	if err := json.Unmarshal(top.get(msg, top.result), &v); err != nil {
		t.Errorf("result span %q: %v", top.get(msg, top.result), err)
	}
	if top.err.ok() || top.method.ok() {
		t.Error("error/method found in a result")
	}
	for _, bad := range []string{``, `[]`, `{"id":}`, `{"id":"x`, `{"id":1`} {
		if _, err := scanTop([]byte(bad)); err == nil {
			t.Errorf("scanTop(%q): no error", bad)
		}
	}
}

func TestAppendCallIsValid(t *testing.T) {
	for _, modern := range []bool{false, true} {
		for _, s := range []Spec{{Size: 3}, {Size: 0, Progress: 2, DelayMs: 5}} {
			raw := appendCall(nil, 42, s, modern)
			var req echoproto.Request
			if err := req.Parse(raw); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if req.Modern() != modern || !req.IsEcho() || req.Params.Arguments.Size != s.Size || req.WantsProgress() != (s.Progress > 0) {
				t.Errorf("%s parsed as %+v", raw, req)
			}
		}
	}
}

// TestHTTPAgainstEcho drives the HTTP caller (both eras, with and without
// progress) against a minimal handler built on echoproto.
func TestHTTPAgainstEcho(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req echoproto.Request
		var body strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			body.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if err := req.Parse([]byte(body.String())); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if !req.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if req.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", "s1")
		}
		if req.WantsProgress() {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 1; i <= req.Params.Arguments.Progress; i++ {
				w.Write([]byte("event: message\ndata: " + string(req.Progress(nil, i)) + "\n\n"))
			}
			out, _ := req.Answer(nil)
			w.Write([]byte("data: " + string(out) + "\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		out, _ := req.Answer(nil)
		w.Write(out)
	}))
	defer srv.Close()
	for _, legacy := range []bool{false, true} {
		c := &HTTPCaller{Client: srv.Client(), URL: srv.URL, Legacy: legacy}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		r := Run(ctx, c, Phase{Concurrency: 4, Count: 40, Spec: Spec{Size: 100, Progress: 2}})
		cancel()
		if r.Errors != 0 || r.Calls != 40 || r.ProgressGot != 80 {
			t.Errorf("legacy=%v: %+v", legacy, r)
		}
		if legacy && c.session != "s1" {
			t.Errorf("session %q", c.session)
		}
	}
}
