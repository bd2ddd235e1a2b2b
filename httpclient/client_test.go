package httpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const reqBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

func TestPostKinds(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    Kind
		msgs    []string
	}{
		{"202", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }, KindAccepted, nil},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, KindAccepted, nil},
		{"200 JSON content type, no body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
		}, KindAccepted, nil},
		{"200 chunked empty body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush() // headers out before the (empty) body: length unknown
		}, KindAccepted, nil},
		{"JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		}, KindJSON, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}},
		{"JSON with charset and odd case", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "Application/JSON ; charset=UTF-8")
			io.WriteString(w, `{"id":2}`)
		}, KindJSON, []string{`{"id":2}`}},
		{"pretty-printed JSON is returned whole", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{\n  \"jsonrpc\": \"2.0\",\n\n  \"id\": 1\n}\n")
		}, KindJSON, []string{"{\n  \"jsonrpc\": \"2.0\",\n\n  \"id\": 1\n}\n"}},
		{"SSE", sseHandler("event: message\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\n"), KindSSE, []string{`{"a":1}`, `{"b":2}`}},
		{"SSE with charset", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "Text/Event-Stream; charset=utf-8")
			io.WriteString(w, "data: x\n\n")
		}, KindSSE, []string{"x"}},
		{"SSE without events", sseHandler(": nothing\n\n"), KindSSE, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handler)
			c := newClient(t, srv.URL)
			resp, err := c.Post(context.Background(), []byte(reqBody), nil)
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			defer resp.Close()
			if resp.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", resp.Kind, tt.kind)
			}
			if got := mustReadAll(t, resp); !slices.Equal(got, tt.msgs) {
				t.Errorf("messages = %q, want %q", got, tt.msgs)
			}
			if _, err := resp.Next(); err != io.EOF {
				t.Errorf("Next after the end = %v, want io.EOF", err)
			}
		})
	}
}

func TestPostUnexpectedContentType(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html></html>")
	})
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if resp != nil || !errors.Is(err, ErrUnexpectedContentType) {
		t.Fatalf("Post = %v, %v; want ErrUnexpectedContentType", resp, err)
	}
	var cte *ContentTypeError
	if !errors.As(err, &cte) || cte.ContentType != "text/html; charset=utf-8" || cte.StatusCode != 200 || cte.Method != "POST" {
		t.Errorf("error = %#v", err)
	}
}

func TestPostRequestHeadersAndBody(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		w.WriteHeader(http.StatusAccepted)
	})
	c := newClient(t, srv.URL)
	c.Header = http.Header{
		"Authorization": {"Bearer static-token"},
		"X-Static":      {"s1", "s2"},
		"x-both":        {"static"}, // not canonical on purpose
	}
	h := http.Header{
		"X-Both":               {"call"},
		"MCP-Protocol-Version": {"2025-11-25"},
		"Mcp-Method":           {"tools/call"},
	}
	resp, err := c.Post(context.Background(), []byte(reqBody), h)
	if err != nil {
		t.Fatal(err)
	}
	resp.Close()
	got := log.header(0)
	want := map[string][]string{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Authorization":        {"Bearer static-token"},
		"X-Static":             {"s1", "s2"},
		"X-Both":               {"call"},
		"Mcp-Protocol-Version": {"2025-11-25"},
		"Mcp-Method":           {"tools/call"},
	}
	for k, v := range want {
		if !slices.Equal(got.Values(k), v) {
			t.Errorf("header %s = %q, want %q", k, got.Values(k), v)
		}
	}
	if v := got.Values("Mcp-Session-Id"); v != nil {
		t.Errorf("Mcp-Session-Id sent without a session: %q", v)
	}
	if log.bodys[0] != reqBody {
		t.Errorf("body = %q, want %q", log.bodys[0], reqBody)
	}
}

func TestSessionID(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch log.add(r) {
		case 1:
			w.Header().Set("MCP-Session-Id", "sess-1")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		case 2:
			w.Header().Set("Mcp-Session-Id", "bad id") // invalid characters: ignored
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := newClient(t, srv.URL)
	post := func() {
		t.Helper()
		resp, err := c.Post(context.Background(), []byte(reqBody), nil)
		if err != nil {
			t.Fatal(err)
		}
		mustReadAll(t, resp)
		resp.Close()
	}
	post()
	if got := c.SessionID(); got != "sess-1" {
		t.Fatalf("SessionID = %q, want sess-1", got)
	}
	post()
	post()
	for i := 1; i < 3; i++ {
		if got := log.header(i).Get("Mcp-Session-Id"); got != "sess-1" {
			t.Errorf("request %d Mcp-Session-Id = %q, want sess-1", i+1, got)
		}
	}
	c.SetSessionID("")
	post()
	if v := log.header(3).Values("Mcp-Session-Id"); v != nil {
		t.Errorf("Mcp-Session-Id after clearing = %q", v)
	}
}

func TestPostStatusError(t *testing.T) {
	body := "session not found\nplease\tre-initialize " + strings.Repeat("é", 200)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Reason", "gone")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, body)
	})
	c := newClient(t, srv.URL+"/mcp?api_key=secret")
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	var se *StatusError
	if resp != nil || !errors.As(err, &se) {
		t.Fatalf("Post = %v, %v; want *StatusError", resp, err)
	}
	if se.StatusCode != 404 || se.Method != "POST" || string(se.Body) != body || se.Header.Get("X-Reason") != "gone" {
		t.Errorf("StatusError = %+v", se)
	}
	msg := err.Error()
	prefix := "httpclient: POST " + srv.URL + "/mcp: 404 Not Found: session not found please re-initialize éé"
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("Error() = %q, want prefix %q", msg, prefix)
	}
	if strings.Contains(msg, "secret") || strings.ContainsAny(msg, "\n\t") || len(msg) > len(prefix)+200 {
		t.Errorf("Error() = %q: leaks the query, spans lines or is too long", msg)
	}
}

func TestPostStatusErrorBodyLimit(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, strings.Repeat("x", 100<<10))
	})
	c := newClient(t, srv.URL)
	_, err := c.Post(context.Background(), []byte(reqBody), nil)
	var se *StatusError
	if !errors.As(err, &se) || len(se.Body) != 64<<10 {
		t.Fatalf("err = %v with %d body bytes, want a StatusError with 64 KiB", err, len(se.Body))
	}
	if (&StatusError{Method: "GET", URL: "u", StatusCode: 599}).Error() != "httpclient: GET u: 599" {
		t.Errorf("unknown status renders as %q", (&StatusError{Method: "GET", URL: "u", StatusCode: 599}).Error())
	}
}

func TestTerminate(t *testing.T) {
	for _, code := range []int{http.StatusNoContent, http.StatusOK, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusInternalServerError} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var log hitLog
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				log.add(r)
				w.WriteHeader(code)
			})
			c := newClient(t, srv.URL)
			c.SetSessionID("sess-9")
			err := c.Terminate(context.Background(), http.Header{"Mcp-Protocol-Version": {"2025-11-25"}})
			if code == http.StatusInternalServerError {
				var se *StatusError
				if !errors.As(err, &se) || se.Method != "DELETE" || se.StatusCode != code {
					t.Errorf("Terminate = %v, want a DELETE StatusError", err)
				}
			} else if err != nil {
				t.Errorf("Terminate = %v, want nil", err)
			}
			if log.count() != 1 {
				t.Fatalf("server saw %d requests, want 1", log.count())
			}
			r := log.reqs[0]
			if r.Method != http.MethodDelete || r.Header.Get("Mcp-Session-Id") != "sess-9" || r.Header.Get("Mcp-Protocol-Version") != "2025-11-25" {
				t.Errorf("request = %s %v", r.Method, r.Header)
			}
			if c.SessionID() != "" {
				t.Errorf("SessionID after Terminate = %q", c.SessionID())
			}
		})
	}
}

func TestTerminateWithoutSession(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { log.add(r) })
	c := newClient(t, srv.URL)
	if err := c.Terminate(context.Background(), nil); err != nil {
		t.Errorf("Terminate = %v", err)
	}
	if log.count() != 0 {
		t.Errorf("server saw %d requests, want none", log.count())
	}
}

func TestResponseCloseAbortsStream(t *testing.T) {
	// The server holds the stream open: only the client's Close ends it.
	srv, disconnected := openSSEServer(t, "id: 1\ndata:\n\ndata: first\n\n")
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := resp.Next(); err != nil || string(msg) != "first" {
		t.Fatalf("Next = %q, %v", msg, err)
	}
	// A second Next blocks on the open stream; Close from here unblocks it.
	nextErr := make(chan error, 1)
	go func() {
		_, err := resp.Next()
		nextErr <- err
	}()
	if err := resp.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := waitFor(t, nextErr, "Next to return"); !errors.Is(err, ErrClosed) {
		t.Errorf("blocked Next = %v, want ErrClosed", err)
	}
	waitFor(t, disconnected, "the server to see the disconnect")
	resp.Close() // idempotent
	if _, err := resp.Next(); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	if resp.LastEventID() != "1" {
		t.Errorf("LastEventID = %q, want 1", resp.LastEventID())
	}
}

func TestNextReturnsContextError(t *testing.T) {
	srv, released := openSSEServer(t, "data: first\n\n")
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := c.Post(ctx, []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	if _, err := resp.Next(); err != nil {
		t.Fatal(err)
	}
	nextErr := make(chan error, 1)
	go func() {
		_, err := resp.Next()
		nextErr <- err
	}()
	cancel()
	// r3labs reports a read failing with context.Canceled as io.EOF; Next
	// must not mistake that for a clean end.
	if err := waitFor(t, nextErr, "Next to return"); err != context.Canceled {
		t.Errorf("Next = %v, want context.Canceled", err)
	}
	waitFor(t, released, "the server to see the disconnect")
}

func TestEventTooLarge(t *testing.T) {
	big := strings.Repeat("x", 2000)
	t.Run("SSE", func(t *testing.T) {
		srv := newServer(t, sseHandler("data: small\n\ndata: "+big+"\n\ndata: after\n\n"))
		c := newClient(t, srv.URL)
		c.MaxEventSize = 1024
		resp, err := c.Post(context.Background(), []byte(reqBody), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Close()
		msgs, err := readAll(t, resp)
		if !slices.Equal(msgs, []string{"small"}) || !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("got %q, %v; want [small], ErrEventTooLarge", msgs, err)
		}
		if !errors.Is(err, bufio.ErrTooLong) {
			t.Errorf("%v does not wrap bufio.ErrTooLong", err)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `"`+big+`"`)
		})
		c := newClient(t, srv.URL)
		c.MaxEventSize = 1024
		resp, err := c.Post(context.Background(), []byte(reqBody), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Close()
		if _, err := resp.Next(); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("Next = %v, want ErrEventTooLarge", err)
		}
	})
}

func TestZeroResponse(t *testing.T) {
	var r Response
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next on a zero Response = %v, want io.EOF", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestSSEBrokenStream(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 5\ndata: first\n\nid: 6\ndata: half")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection without ending the chunked body
	})
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	msgs, err := readAll(t, resp)
	if !slices.Equal(msgs, []string{"first"}) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %q, %v; want [first] and an unexpected EOF, not a clean end", msgs, err)
	}
	if resp.LastEventID() != "5" {
		t.Errorf("LastEventID = %q, want 5 for resumption", resp.LastEventID())
	}
	if _, again := resp.Next(); again != err {
		t.Errorf("errors must be sticky: %v then %v", err, again)
	}
}
