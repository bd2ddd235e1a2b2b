package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A POST for a session id nobody opened, or one another principal opened,
// is 404 — the same answer, so that ids cannot be confirmed — and a
// session of the HTTP+SSE transport is not reachable through the
// Streamable HTTP path either.
func TestSSEForeignSession(t *testing.T) {
	b := startBridge(t, Config{AuthTokens: []string{"token-a", "token-b"}}, bins["memos"])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	a := openRawSSE(t, ctx, b.srv.URL, "/sse", bearer("token-a"))
	// Before A initializes, B cannot make A's stream carry a session of
	// B's.
	if st, body := ssePost(t, a.message, sseInit, bearer("token-b")); st != 404 {
		t.Errorf("token B initializing on A's stream: %d %s, want 404", st, body)
	}
	initRaw(t, a, bearer("token-a"))
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if st, body := ssePost(t, a.message, list, bearer("token-b")); st != 404 {
		t.Errorf("token B posting to A's session: %d %s, want 404", st, body)
	}
	if st, body := ssePost(t, a.message, list, nil); st != 401 {
		t.Errorf("no token: %d %s, want 401", st, body)
	}
	unknown := b.srv.URL + "/message?sessionId=0123456789abcdef0123456789abcdef"
	if st, body := ssePost(t, unknown, list, bearer("token-a")); st != 404 {
		t.Errorf("unknown session: %d %s, want 404", st, body)
	}
	sid := a.message[strings.Index(a.message, "=")+1:]
	resp, body := rawPost(t, b.URL, list, map[string]string{"Authorization": "Bearer token-a", "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2024-11-05"})
	if resp.StatusCode != 404 {
		t.Errorf("the SSE session through /mcp: %d %s, want 404", resp.StatusCode, body)
	}
	// The owner still gets its answer, on its stream.
	if st, body := ssePost(t, a.message, list, bearer("token-a")); st != 202 {
		t.Fatalf("owner: %d %s", st, body)
	}
	if ev := a.next(t); !strings.Contains(ev[1], `"memo_list_memos"`) {
		t.Errorf("owner's answer %q", ev)
	}
	// Origin checks apply to the stream as to /mcp (DNS rebinding).
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer token-a")
	req.Header.Set("Origin", "https://evil.example")
	oresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	oresp.Body.Close()
	if oresp.StatusCode != 403 {
		t.Errorf("GET /sse from a foreign Origin: %d, want 403", oresp.StatusCode)
	}
	// A second initialize on the same stream is refused.
	if st, body := ssePost(t, a.message, sseInit, bearer("token-a")); st != 400 {
		t.Errorf("second initialize: %d %s, want 400", st, body)
	}
}

// Smuggled routing keys through the HTTP+SSE face of a shared child: every
// such POST is refused with 400 (never 202 as if it were a notification),
// and the victims, each on its own stream, see only their own progress
// and answer.
func TestSSESmuggledKeysNeverCross(t *testing.T) {
	b := startBridge(t, Config{SessionMode: SessionShared}, bins["memos"], "-step-delay", "50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const victims = 3
	var wg sync.WaitGroup
	started := make(chan struct{}, victims)
	for i := range victims {
		s := openRawSSE(t, ctx, b.srv.URL, "/sse", nil)
		initRaw(t, s, nil)
		v := victim{steps: 40 + i, body: fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":%d},"_meta":{"progressToken":"p"}}}`, 40+i)}
		wg.Go(func() {
			if st, body := ssePost(t, s.message, v.body, nil); st != 202 {
				t.Errorf("victim %d: %d %s", i, st, body)
				return
			}
			started <- struct{}{}
			var msgs []map[string]any
			for {
				ev := s.next(t)
				var m map[string]any
				json.Unmarshal([]byte(ev[1]), &m)
				msgs = append(msgs, m)
				if m["id"] != nil {
					break
				}
			}
			v.check(t, fmt.Sprintf("victim %d", i), msgs)
		})
	}
	for range victims {
		<-started
	}
	waitFor(t, "the victims' calls to be in flight", func() bool { return b.InFlight() >= victims })
	atk := openRawSSE(t, ctx, b.srv.URL, "/sse", nil)
	initRaw(t, atk, nil)
	for k := 1; k <= 16; k++ {
		bodies, _ := smuggled(k, "")
		for _, body := range bodies {
			st, raw := ssePost(t, atk.message, body, nil)
			var e struct{ Error struct{ Code int } }
			json.Unmarshal([]byte(raw), &e)
			if st != 400 || (e.Error.Code != -32600 && e.Error.Code != -32700) {
				t.Errorf("smuggled %s: %d %s, want 400 with -32600", body, st, raw)
			}
		}
	}
	wg.Wait()
}

// A client that opens its stream and never reads it is cut once the
// stream holds more than a stream may (--max-message-size) or the budget
// (--max-buffered) allows: its session ends, its bytes go back to the
// budget, and its message URL answers 404.
func TestSSEUnreadStreamBounded(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild(), MaxBuffered: 8 << 20, MaxMessageSize: 2 << 20})
	addr := strings.TrimPrefix(b.srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	br := bufio.NewReader(c)
	message := ""
	for message == "" {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream's head: %v", err)
		}
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			message = b.srv.URL + p
		}
	}
	if st, body := ssePost(t, message, sseInit, nil); st != 202 {
		t.Fatalf("initialize: %d %s", st, body)
	}
	// From here on the client reads nothing.
	big := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"size":1048576}}}`
	for i := 1; i <= 40 && b.sessions.count() > 0; i++ {
		st, _ := ssePost(t, message, fmt.Sprintf(big, i), nil)
		switch st {
		case 202, 503, 404: // 503: the budget is spent for now; 404: cut
		default:
			t.Fatalf("call %d: %d", i, st)
		}
	}
	waitFor(t, "the session to end", func() bool { return b.sessions.count() == 0 })
	waitFor(t, "the budget to be given back", func() bool { return b.lim.Buffered() == 0 })
	if !strings.Contains(b.log.String(), "stream cut") {
		t.Errorf("no stream-cut warning in the log")
	}
	if st, _ := ssePost(t, message, `{"jsonrpc":"2.0","id":999,"method":"tools/list"}`, nil); st != 404 {
		t.Errorf("the cut session's message URL: %d, want 404", st)
	}
}

// Closing the stream ends the session and cancels what it has pending at
// the child; a stream that never initializes ends after the idle timeout.
func TestSSECloseCancels(t *testing.T) {
	log := filepath.Join(t.TempDir(), "stdin.log")
	b := startBridge(t, Config{SessionMode: SessionShared, SessionIdleTimeout: 2 * time.Second}, teeCommand(log, bins["memos"])...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	s := openRawSSE(t, sctx, b.srv.URL, "/sse", nil)
	initRaw(t, s, nil)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},"_meta":{"progressToken":"p"}}}`
	if st, body := ssePost(t, s.message, call, nil); st != 202 {
		t.Fatalf("call: %d %s", st, body)
	}
	if ev := s.next(t); !strings.Contains(ev[1], "notifications/progress") {
		t.Fatalf("first event %q, want progress", ev)
	}
	scancel()
	waitFor(t, "the session to end with its stream", func() bool { return b.sessions.count() == 0 && b.InFlight() == 0 })
	waitFor(t, "notifications/cancelled to reach the child", func() bool {
		raw, _ := os.ReadFile(log)
		return strings.Contains(string(raw), `"method":"notifications/cancelled"`)
	})
	// An idle stream with no session is ended.
	idle := openRawSSE(t, ctx, b.srv.URL, "/sse", nil)
	select {
	case _, ok := <-idle.events:
		if ok {
			t.Error("an event on an idle stream")
		}
	case <-time.After(30 * time.Second):
		t.Error("a stream without a session outlived the idle timeout")
	}
}
