package httpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// fakeSSE is a scriptable HTTP+SSE server: GET /sse opens the stream and
// sends first (normally the endpoint event); each POST to /message is
// answered 202 and handed to onPost, which may write events to the stream
// with send or end it with hangUp.
type fakeSSE struct {
	t      *testing.T
	srv    *httptest.Server
	first  func(srvURL string) string
	onPost func(f *fakeSSE, body string)

	mu      sync.Mutex
	events  chan string   // the current stream's queue
	hang    chan struct{} // closes the current stream
	streams int
	posts   []string
	getSeen chan struct{}
}

func newFakeSSE(t *testing.T, first func(string) string, onPost func(*fakeSSE, string)) *fakeSSE {
	f := &fakeSSE{t: t, first: first, onPost: onPost, getSeen: make(chan struct{}, 16)}
	f.srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			f.serveStream(w, r)
		case r.Method == http.MethodPost && r.URL.Path == "/message":
			b, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			f.posts = append(f.posts, string(b))
			f.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "Accepted")
			if f.onPost != nil {
				f.onPost(f, string(b))
			}
		default:
			// What an SSE-only Express server answers a POST to /sse.
			http.Error(w, "Cannot "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		}
	})
	return f
}

func (f *fakeSSE) serveStream(w http.ResponseWriter, r *http.Request) {
	events, hang := make(chan string, 64), make(chan struct{})
	f.mu.Lock()
	f.events, f.hang = events, hang
	f.streams++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, f.first(f.srv.URL))
	w.(http.Flusher).Flush()
	f.getSeen <- struct{}{}
	for {
		select {
		case ev := <-events:
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		case <-hang:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// send queues one message event on the current stream.
func (f *fakeSSE) send(data string) {
	f.mu.Lock()
	ch := f.events
	f.mu.Unlock()
	ch <- "event: message\ndata: " + data + "\n\n"
}

func (f *fakeSSE) hangUp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.hang)
}

func (f *fakeSSE) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

func endpointEvent(string) string {
	return "event: endpoint\ndata: /message?sessionId=abc\n\n"
}

// answerEcho answers every request with a result carrying its id, after a
// progress notification when the request asked for one.
func answerEcho(f *fakeSSE, body string) {
	id, method, token := peekMessage([]byte(body))
	if id == "" || method == "" {
		return
	}
	if token != "" {
		f.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + token + `,"progress":1}}`)
	}
	f.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"echo":"` + method + `"}}`)
}

func sseClient(t *testing.T, f *fakeSSE, tr Transport) *Client {
	c := &Client{Endpoint: f.srv.URL + "/sse", Transport: tr, MaxRetries: -1}
	t.Cleanup(func() { c.Close(); c.CloseIdleConnections() })
	return c
}

func TestSSEPostAnswersAndProgressComeOnTheStream(t *testing.T) {
	f := newFakeSSE(t, endpointEvent, answerEcho)
	c := sseClient(t, f, TransportSSE)
	ctx := context.Background()
	resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReadAll(t, resp); len(got) != 1 || !strings.Contains(got[0], `"echo":"initialize"`) {
		t.Fatalf("initialize answer = %q", got)
	}
	resp.Close()
	sid := c.SessionID()
	if sid == "" {
		t.Fatal("no session id after the first POST")
	}
	resp, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"_meta":{"progressToken":7}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := mustReadAll(t, resp)
	resp.Close()
	if len(got) != 2 || !strings.Contains(got[0], "notifications/progress") || !strings.Contains(got[1], `"id":"c2"`) {
		t.Fatalf("call messages = %q, want progress then the answer", got)
	}
	// A notification gets nothing back.
	resp, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	if err != nil || resp.Kind != KindAccepted {
		t.Fatalf("notification: %v, %v", resp, err)
	}
	resp.Close()
	if c.SessionID() != sid || f.streams != 1 {
		t.Errorf("session %q -> %q, %d streams: want one stream throughout", sid, c.SessionID(), f.streams)
	}
}

func TestSSEUnsolicitedMessagesGoToListen(t *testing.T) {
	f := newFakeSSE(t, endpointEvent, answerEcho)
	c := sseClient(t, f, TransportSSE)
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)
	resp.Close()
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.ListenReady(ctx, nil, func(msg []byte) { got <- string(msg) }, nil)
	}()
	f.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	if m := waitFor(t, got, "the unsolicited message"); !strings.Contains(m, "list_changed") {
		t.Errorf("got %q", m)
	}
	cancel()
	if err := waitFor(t, done, "Listen's end"); !errors.Is(err, context.Canceled) {
		t.Errorf("Listen = %v", err)
	}
}

func TestSSEEndpointOnAnotherOriginIsRefused(t *testing.T) {
	var evilHits hitLog
	evil := newServer(t, func(w http.ResponseWriter, r *http.Request) { evilHits.add(r) })
	f := newFakeSSE(t, func(string) string {
		return "event: endpoint\ndata: " + evil.URL + "/message?sessionId=abc\n\n"
	}, answerEcho)
	c := sseClient(t, f, TransportSSE)
	c.Header = http.Header{"Authorization": {"Bearer secret"}}
	_, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	if !errors.Is(err, ErrEndpointOrigin) {
		t.Fatalf("Post = %v, want ErrEndpointOrigin", err)
	}
	if evilHits.count() != 0 {
		t.Errorf("the other origin got %d requests", evilHits.count())
	}
	// Scheme and port are part of the origin too.
	base, _ := url.Parse("http://127.0.0.1:8080/sse")
	for _, ep := range []string{"https://127.0.0.1:8080/m", "http://127.0.0.1:8081/m", "//localhost:8080/m"} {
		if _, err := endpointURL(base, []byte(ep)); !errors.Is(err, ErrEndpointOrigin) {
			t.Errorf("endpoint %q: %v, want ErrEndpointOrigin", ep, err)
		}
	}
	if u, err := endpointURL(base, []byte(" /message?sessionId=1 ")); err != nil || u.String() != "http://127.0.0.1:8080/message?sessionId=1" {
		t.Errorf("relative endpoint = %v, %v", u, err)
	}
}

func TestSSEEndpointMissing(t *testing.T) {
	for name, first := range map[string]string{
		"message first": "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n",
		"blank":         "event: endpoint\ndata:   \n\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeSSE(t, func(string) string { return first }, answerEcho)
			c := sseClient(t, f, TransportSSE)
			_, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
			if !errors.Is(err, ErrSSEEndpoint) {
				t.Fatalf("Post = %v, want ErrSSEEndpoint", err)
			}
			if f.postCount() != 0 {
				t.Errorf("%d POSTs sent without an endpoint", f.postCount())
			}
		})
	}
	t.Run("stream ends first", func(t *testing.T) {
		srv := newServer(t, sseHandler(": only a comment\n\n"))
		c := &Client{Endpoint: srv.URL, Transport: TransportSSE, MaxRetries: -1}
		defer c.Close()
		_, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
		if !errors.Is(err, ErrSSEEndpoint) {
			t.Fatalf("Post = %v, want ErrSSEEndpoint", err)
		}
	})
}

func TestSSEStreamBreaksMidRequest(t *testing.T) {
	posted := make(chan string, 4)
	f := newFakeSSE(t, endpointEvent, func(f *fakeSSE, body string) {
		if strings.Contains(body, "initialize") {
			answerEcho(f, body)
			return
		}
		posted <- body
	})
	c := sseClient(t, f, TransportSSE)
	ctx := context.Background()
	resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)
	resp.Close()
	sid := c.SessionID()

	resp, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, posted, "the call's POST")
	f.hangUp()
	_, err = resp.Next()
	resp.Close()
	if !errors.Is(err, ErrSSEStreamLost) {
		t.Fatalf("Next = %v, want ErrSSEStreamLost", err)
	}
	// The session went with its stream: 404, as for a forgotten session.
	_, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Fatalf("Post in the lost session = %v, want a 404", err)
	}
	// A new session opens a new stream.
	c.SetSessionID("")
	resp, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"initialize"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)
	resp.Close()
	if c.SessionID() == sid || c.SessionID() == "" || f.streams != 2 {
		t.Errorf("session %q -> %q over %d streams, want a new one on a second stream", sid, c.SessionID(), f.streams)
	}
}

func TestSSEOversizedEventIsBounded(t *testing.T) {
	f := newFakeSSE(t, endpointEvent, func(f *fakeSSE, body string) {
		if strings.Contains(body, "initialize") {
			answerEcho(f, body)
			return
		}
		f.send(`{"jsonrpc":"2.0","id":2,"result":{"big":"` + strings.Repeat("x", 8<<10) + `"}}`)
	})
	c := sseClient(t, f, TransportSSE)
	c.MaxEventSize = 1 << 10
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)
	resp.Close()
	resp, err = c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	msg, err := resp.Next()
	if !errors.Is(err, ErrSSEStreamLost) || !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("Next = %.40q, %v; want ErrSSEStreamLost wrapping ErrEventTooLarge", msg, err)
	}
}

func TestSSEAutoFallsBackOn404(t *testing.T) {
	f := newFakeSSE(t, endpointEvent, answerEcho)
	c := sseClient(t, f, TransportAuto)
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	if err != nil {
		t.Fatalf("Post = %v, want the fallback to SSE", err)
	}
	if got := mustReadAll(t, resp); len(got) != 1 || !strings.Contains(got[0], "initialize") {
		t.Errorf("answer = %q", got)
	}
	resp.Close()
	if !c.usingSSE() || f.streams != 1 || f.postCount() != 1 {
		t.Errorf("SSE=%v streams=%d posts=%d, want the probe's stream reused for the one POST", c.usingSSE(), f.streams, f.postCount())
	}
}

func TestSSEStreamableOnlyHintsAtSSE(t *testing.T) {
	f := newFakeSSE(t, endpointEvent, answerEcho)
	c := sseClient(t, f, TransportStreamableHTTP)
	_, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Fatalf("Post = %v, want the 404", err)
	}
	if !strings.Contains(err.Error(), "--transport sse") || !strings.Contains(err.Error(), "Cannot POST /sse") {
		t.Errorf("error %q lacks the hint or the server's words", err)
	}
	if f.streams != 0 {
		t.Errorf("streamable-http opened %d SSE streams", f.streams)
	}
}

func TestSSEAutoNoFallbackForAJSONRPCAnswer(t *testing.T) {
	var hits hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.add(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
	})
	c := &Client{Endpoint: srv.URL, MaxRetries: -1}
	defer c.Close()
	_, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"x"}`), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Hint != "" || hits.count() != 1 {
		t.Errorf("Post = %v after %d requests, want the server's own 404 answer and no probe", err, hits.count())
	}
}

func FuzzEndpointURL(f *testing.F) {
	for _, s := range []string{"/message?sessionId=1", "http://127.0.0.1:8080/m", "//evil/", "http://127.0.0.1:8080@evil/", " ", "\x00"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://127.0.0.1:8080/sse")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := endpointURL(base, []byte(s))
		if err == nil && outbound.Origin(u) != outbound.Origin(base) {
			t.Fatalf("%q resolved to %v on another origin", s, u)
		}
		peekMessage([]byte(s))
	})
}
