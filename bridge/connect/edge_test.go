package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func modernCall(id, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{},%s}}`, id, tool, meta)
}

func TestRetries503ThenSucceeds(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if hits.Add(1) <= 2 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		answer(w, r, body, `{"resultType":"complete","content":[]}`)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	start := time.Now()
	h.send(modernCall("1", "x"))
	resp, others := h.response("1", 20*time.Second)
	if resp["result"] == nil || len(others) != 0 {
		t.Fatalf("got %v (+%v), want one result", resp, others)
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("server hit %d times, want 3", n)
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("answered after %v; Retry-After: 1 twice means at least 2s", d)
	}
}

func TestRemoteDownThenBack(t *testing.T) {
	// Reserve a port, then close it: nothing listens there yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := startHost(t, Config{URL: "http://" + addr + "/mcp", MaxRetries: 2, MaxRetryWait: 200 * time.Millisecond})
	start := time.Now()
	h.send(modernCall("1", "x"))
	h.send(modernCall("2", "x"))
	for range 2 {
		resp := h.next(10 * time.Second)
		if !contains(errorMessage(resp), "connection refused") {
			t.Errorf("%v, want a connection-refused error", resp)
		}
	}
	t.Logf("errors after %v (2 retries, 200ms cap)", time.Since(start))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("errors took %v, beyond the retry budget", d)
	}
	// The remote comes back: the bridge serves the next request.
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s was taken meanwhile: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, readBody(r), `{"resultType":"complete","content":[]}`)
	})}
	go srv.Serve(l)
	defer srv.Close()
	h.send(modernCall("3", "x"))
	if resp, _ := h.response("3", 10*time.Second); resp["result"] == nil {
		t.Fatalf("after the remote came back: %v", resp)
	}
}

// legacyServer is a hand-rolled 2025-11-25 server whose session can be
// expired on demand, counting the tools/call requests it receives.
type legacyServer struct {
	mu        sync.Mutex
	session   string
	sessions  int
	toolCalls int
	lists     int
	inits     int
	deletes   int
}

func (s *legacyServer) expire() {
	s.mu.Lock()
	s.session = ""
	s.mu.Unlock()
}

func (s *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		http.Error(w, "no stream", http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		s.deletes++
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body := readBody(r)
	var m wire.Message
	wire.Parse(body, &m)
	if m.Method == "initialize" {
		s.inits++
		s.sessions++
		s.session = fmt.Sprintf("sess-%d", s.sessions)
		w.Header().Set("Mcp-Session-Id", s.session)
		answer(w, r, body, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`)
		return
	}
	if r.Header.Get("Mcp-Session-Id") != s.session || s.session == "" {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("MCP-Protocol-Version") != "2025-11-25" {
		http.Error(w, "bad version header", http.StatusBadRequest)
		return
	}
	switch {
	case m.Kind != wire.KindRequest:
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "tools/list":
		s.lists++
		answer(w, r, body, `{"tools":[]}`)
	case m.Method == "tools/call":
		s.toolCalls++
		answer(w, r, body, `{"content":[]}`)
	default:
		answer(w, r, body, `{}`)
	}
}

func initLegacy(h *host) {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp, _ := h.response("0", 10*time.Second); resp["result"] == nil {
		h.t.Fatalf("initialize: %v", resp)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestLegacySession404(t *testing.T) {
	ls := &legacyServer{}
	srv := httptest.NewServer(ls)
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	initLegacy(h)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp, _ := h.response("1", 10*time.Second); resp["result"] == nil {
		t.Fatalf("tools/list: %v", resp)
	}
	ls.expire()
	// An idempotent request is replayed on a fresh session.
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp, _ := h.response("2", 10*time.Second); resp["result"] == nil {
		t.Fatalf("tools/list after the session expired: %v", resp)
	}
	ls.mu.Lock()
	inits := ls.inits
	ls.mu.Unlock()
	if inits != 2 {
		t.Errorf("%d initialize requests, want 2 (the replay)", inits)
	}
	ls.expire()
	// A tools/call is never sent twice.
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
	resp, _ := h.response("3", 10*time.Second)
	if !contains(errorMessage(resp), "session expired") {
		t.Fatalf("tools/call after expiry: %v, want an error naming the expired session", resp)
	}
	ls.mu.Lock()
	calls := ls.toolCalls
	ls.mu.Unlock()
	if calls != 0 {
		t.Errorf("tools/call reached the server %d times, want 0", calls)
	}
	h.close()
	// Leaving deletes the session.
	waitFor(t, "DELETE of the session", func() bool {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		return ls.deletes == 1
	})
}

// A response that comes on the GET stream instead of its request's stream
// still answers that request, exactly once, and ends its stream.
func TestResponseOnGETStream(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	initLegacy(h)
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"getanswer","arguments":{}}}`)
	if resp, _ := h.response("7", 10*time.Second); dig(resp, "result", "via") != "get" {
		t.Fatalf("tools/call: %v, want the answer from the GET stream", resp)
	}
	select {
	case <-rl.gotAns:
	case <-time.After(10 * time.Second):
		t.Fatal("the call's own stream is still open after its response came on the GET stream")
	}
	h.expectNothing(200 * time.Millisecond)
}

func TestConcurrentRequestsRandomOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond) // the server's own pace, not synchronization
		id := string(m.IDBytes())
		if rand.IntN(2) == 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1}}\n\n", id)
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"echo\":%s}}\n\n", id, id)
			return
		}
		// A modern server: its results carry resultType.
		answer(w, r, body, `{"resultType":"complete","echo":`+id+`}`)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	const n = 100
	for i := range n {
		id := fmt.Sprint(i)
		if i%2 == 1 {
			id = fmt.Sprintf(`"s-%d"`, i)
		}
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":%s,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, id))
	}
	seen := map[string]bool{}
	for len(seen) < n {
		m := h.next(20 * time.Second)
		if m["method"] == "notifications/progress" {
			continue
		}
		id, _ := json.Marshal(m["id"])
		echo, _ := json.Marshal(m["result"].(map[string]any)["echo"])
		if string(id) != string(echo) {
			t.Errorf("response id %s carries the result of %s", id, echo)
		}
		if seen[string(id)] {
			t.Errorf("two responses for id %s", id)
		}
		seen[string(id)] = true
	}
}

func TestHostCancelClosesThePOST(t *testing.T) {
	disconnected := make(chan struct{})
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(arrived)
		<-r.Context().Done() // the server observes the disconnect
		close(disconnected)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	h.send(modernCall(`"slow"`, "slow"))
	<-arrived
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`)
	select {
	case <-disconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the POST closed")
	}
	// Nothing is written for a cancelled request.
	select {
	case l := <-h.lines:
		t.Fatalf("unexpected output after a cancel: %s", l)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestLargeResultOneLine(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 1<<20) // 16 MiB of text
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}}\n\n", m.IDBytes(), payload)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	h.send(modernCall("1", "big"))
	select {
	case l := <-h.lines:
		if !strings.Contains(l, payload) || len(l) < len(payload) {
			t.Fatalf("result line of %d bytes lost data", len(l))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no result")
	}
}

func TestGarbageAndOversizedLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, readBody(r), `{"ok":true}`)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL, MaxMessageSize: 1024})
	h.send(`this is not json`)
	if m := h.next(5 * time.Second); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Fatalf("garbage: %v, want -32700 with id null", m)
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"` + strings.Repeat("p", 4096) + `"}}`)
	if m := h.next(5 * time.Second); m["error"] == nil || !contains(errorMessage(m), "max-message-size") {
		t.Fatalf("oversized: %v", m)
	}
	h.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r")
	if m, _ := h.response("2", 5*time.Second); m["result"] == nil {
		t.Fatalf("a valid request after bad lines (CRLF-terminated): %v", m)
	}
}

func TestPrettyJSONIsCompacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		var buf bytes.Buffer
		json.Indent(&buf, wire.ResultResponse(m.IDBytes(), []byte(`{"resultType":"complete","text":"a\nb"}`)), "", "  ")
		w.Write(buf.Bytes())
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	h.send(modernCall("1", "x"))
	select {
	case l := <-h.lines:
		if l != `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","text":"a\nb"}}` {
			t.Fatalf("got %s", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no output")
	}
}

func TestHTTPErrorsBecomeJSONRPCErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		switch r.Header.Get("Mcp-Name") {
		case "auth":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			http.Error(w, "no token", http.StatusUnauthorized)
		case "boom":
			http.Error(w, "upstream exploded", http.StatusBadGateway)
		case "mismatch":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"Header mismatch"}}`)
		}
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	h.send(modernCall("1", "auth"))
	resp, _ := h.response("1", 5*time.Second)
	if msg := errorMessage(resp); !contains(msg, "401") || !contains(msg, "--bearer-token") {
		t.Errorf("401: %q", msg)
	}
	if data := resp["error"].(map[string]any)["data"].(map[string]any); data["httpStatus"] != float64(401) || data["wwwAuthenticate"] == nil {
		t.Errorf("401 data: %v", data)
	}
	h.send(modernCall("2", "boom"))
	resp, _ = h.response("2", 5*time.Second)
	if data := resp["error"].(map[string]any)["data"].(map[string]any); data["httpStatus"] != float64(502) || !contains(fmt.Sprint(data["body"]), "upstream exploded") {
		t.Errorf("502: %v", resp)
	}
	// The server's own JSON-RPC error is passed on as it is.
	h.send(modernCall("3", "mismatch"))
	resp, _ = h.response("3", 5*time.Second)
	if resp["error"].(map[string]any)["code"] != float64(-32020) {
		t.Errorf("server error not forwarded: %v", resp)
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL, RequestTimeout: 300 * time.Millisecond})
	start := time.Now()
	h.send(modernCall("1", "x"))
	resp, _ := h.response("1", 10*time.Second)
	if resp["error"].(map[string]any)["code"] != float64(wire.CodeRequestTimeout) {
		t.Fatalf("got %v, want a timeout error", resp)
	}
	t.Logf("timeout error after %v", time.Since(start))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// (#21) A host that pipelines notifications/initialized right after
// initialize, before its answer: the notification carries the session id
// that answer assigns. The server holds its initialize answer until the
// notification comes (or 1 s), so a notification sent too early is caught
// every time.
func TestPipelinedInitializedCarriesSession(t *testing.T) {
	rl := newRawLegacy()
	early := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body := readBody(r)
			r.Body = readCloser(body)
			switch {
			case strings.Contains(string(body), `"initialize"`):
				select {
				case <-early:
				case <-time.After(time.Second):
				}
			case strings.Contains(string(body), `"notifications/initialized"`) && r.Header.Get("Mcp-Session-Id") == "":
				early <- struct{}{}
			}
		}
		rl.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp, _ := h.response("0", 10*time.Second); resp["result"] == nil {
		t.Fatalf("initialize: %v", resp)
	}
	if resp, _ := h.response("1", 10*time.Second); resp["result"] == nil {
		t.Errorf("pipelined tools/list: %v", resp)
	}
	for _, s := range rl.rec.of("notifications/initialized") {
		if sid := s.header.Get("Mcp-Session-Id"); sid != "sess-1" {
			t.Errorf("notifications/initialized went with Mcp-Session-Id %q, want sess-1", sid)
		}
	}
	if n := len(rl.rec.of("notifications/initialized")); n != 1 {
		t.Errorf("%d notifications/initialized reached the server, want 1", n)
	}
}

// The hand-rolled remotes answer through testmain's helpers.
var (
	answer   = testmain.Answer
	readBody = testmain.ReadBody
)
