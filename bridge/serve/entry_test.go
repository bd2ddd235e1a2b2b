package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// recvRaw returns the bytes of the next message Recv gives.
func recvRaw(c *Conn) ([]byte, error) {
	var m wire.Message
	err := c.Recv(&m)
	return m.Raw, err
}

// entryAsk sends a request on an in-process session and returns the
// message answering it (notifications before it are skipped).
func entryAsk(t *testing.T, c *Conn, req string) map[string]any {
	t.Helper()
	if err := c.Send([]byte(req)); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := recvRaw(c)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%v: %q", err, msg)
		}
		if _, ok := m["id"]; ok && m["method"] == nil {
			return m
		}
	}
}

// An in-process session (Handler.Open) is a 2025 session of the Handler
// for a caller it admits by its own tokens: every kind of child (its own,
// the shared one, a 2026-07-28-only child the session is translated onto)
// serves it, the access log names the caller, and Close ends it. A token
// the Handler does not accept, or none, opens nothing.
func TestOpenSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		args []string
	}{
		{"own child", Config{}, nil},
		{"shared child", Config{SessionMode: SessionShared}, nil},
		{"2026-only child", Config{}, []string{"-legacy=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.AccessLog = true
			cfg.NamedTokens = []auth.NamedToken{{Name: "team-a", Token: "tok-a"}}
			b := startBridge(t, cfg, append([]string{bins["memos"]}, tc.args...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, bad := range []Caller{{}, {Authorization: "Bearer guessed"}, {Subject: "someone"}} {
				if _, err := b.Open(ctx, bad, nil); !errors.Is(err, ErrCallerRefused) {
					t.Errorf("Open(%+v) = %v, want ErrCallerRefused", bad, err)
				}
			}
			c, err := b.Open(ctx, Caller{Authorization: "Bearer tok-a"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			init := entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			if res, _ := init["result"].(map[string]any); res == nil || res["protocolVersion"] != "2025-11-25" {
				t.Fatalf("initialize = %v", init)
			}
			if err := c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
				t.Fatal(err)
			}
			for id := range 3 {
				call := entryAsk(t, c, `{"jsonrpc":"2.0","id":`+string(rune('2'+id))+`,"method":"tools/call","params":{"name":"auth_get_current_user","arguments":{}}}`)
				if res, _ := call["result"].(map[string]any); res == nil || res["isError"] == true {
					t.Fatalf("tools/call = %v", call)
				}
			}
			if b.sessions.count() != 1 {
				t.Errorf("sessions = %d, want 1", b.sessions.count())
			}
			c.Close()
			if _, err := recvRaw(c); err != io.EOF {
				t.Errorf("Recv after Close = %v, want EOF", err)
			}
			if err := c.Send([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)); err == nil {
				t.Error("Send after Close succeeded")
			}
			if n := b.sessions.count(); n != 0 {
				t.Errorf("sessions after Close = %d, want 0", n)
			}
			var principals []string
			for _, line := range strings.Split(b.log.String(), "\n") {
				var l struct{ Message, Principal string }
				if json.Unmarshal([]byte(line), &l) == nil && l.Message == "request" {
					principals = append(principals, l.Principal)
				}
			}
			if len(principals) < 5 || slices.ContainsFunc(principals, func(p string) bool { return p != "team-a" }) {
				t.Errorf("access log principals = %v, want team-a for every message", principals)
			}
		})
	}
}

// scopeAuth is an OAuth resource server stand-in: it admits no HTTP
// request, and an in-process caller only with the scope "s1".
type scopeAuth struct{}

func (scopeAuth) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	return "", errors.New("no")
}
func (scopeAuth) ServeMetadata(w http.ResponseWriter, r *http.Request) {}
func (scopeAuth) AuthorizeCaller(subject string, scopes []string) error {
	if !slices.Contains(scopes, "s1") {
		return errors.New("lacks s1")
	}
	return nil
}

// plainAuth cannot check an in-process caller's scopes.
type plainAuth struct{ scopeAuth }

func (plainAuth) AuthorizeCaller() {}

// An OAuth caller verified elsewhere is admitted in-process only by an
// Authenticator that checks its scopes against the endpoint's own
// (CallerAuthorizer): without them it is refused, and so it is by an
// Authenticator that cannot check them.
func TestOpenCallerScopes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		auth   auth.Authenticator
		scopes []string
		ok     bool
	}{
		{scopeAuth{}, []string{"s1", "s2"}, true},
		{scopeAuth{}, []string{"s2"}, false},
		{scopeAuth{}, nil, false},
		{plainAuth{}, []string{"s1"}, false},
	} {
		h, err := New(Config{Auth: tc.auth, Command: testChild()})
		if err != nil {
			t.Fatal(err)
		}
		c, err := h.Open(ctx, Caller{Subject: "https://as.example alice", Scopes: tc.scopes}, nil)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrCallerRefused)) {
			t.Errorf("%T with scopes %v: Open = %v, want admitted %v", tc.auth, tc.scopes, err, tc.ok)
		}
		if c != nil {
			if c.p != auth.OAuthPrincipal("https://as.example alice") {
				t.Errorf("principal = %v", c.p)
			}
			c.Close()
		}
		h.Close()
	}
}

// An in-process session carries a request of the child to the client and
// the client's answer back (the session's relay, as over HTTP), and the
// child's progress for a call.
func TestOpenServerRequest(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-roots","arguments":{}}}`)); err != nil {
		t.Fatal(err)
	}
	msg, err := recvRaw(c)
	if err != nil {
		t.Fatal(err)
	}
	var ask struct {
		ID     json.RawMessage
		Method string
	}
	if json.Unmarshal(msg, &ask); ask.Method != "roots/list" {
		t.Fatalf("first message = %s, want the child's roots/list", msg)
	}
	res := entryAsk(t, c, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"roots":[{"uri":"file:///entry-root"}]}}`)
	if !strings.Contains(fmt.Sprint(res), "entry-root") {
		t.Fatalf("tools/call = %v, want the roots answered", res)
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress-wait","arguments":{},"_meta":{"progressToken":"tok-9"}}}`)); err != nil {
		t.Fatal(err)
	}
	msg, err = recvRaw(c)
	if err != nil || !strings.Contains(string(msg), `"notifications/progress"`) || !strings.Contains(string(msg), `"tok-9"`) {
		t.Fatalf("progress = %s, %v", msg, err)
	}
}

// A session the Handler forgets (here ended as its child's exit ends it)
// is renewed by the Conn with its client's handshake: the next request
// is answered by a new session, and the Handler holds that one only.
func TestOpenRenewsSession(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	c.mu.Lock()
	old := c.sid
	c.mu.Unlock()
	b.sessions.lookup(old).end("test: as if its child exited")
	res := entryAsk(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r, _ := res["result"].(map[string]any); r == nil || r["tools"] == nil {
		t.Fatalf("tools/list after the session ended = %v", res)
	}
	c.mu.Lock()
	now := c.sid
	c.mu.Unlock()
	if now == old || b.sessions.lookup(now) == nil || b.sessions.count() != 1 {
		t.Errorf("session %s -> %s, %d sessions: want a new one, alone", old, now, b.sessions.count())
	}
	if !strings.Contains(b.log.String(), "a new one replaced it") {
		t.Error("the renewal was not logged")
	}
}

// A request the Handler refuses for now (503: too many in flight) is sent
// again after its Retry-After, as an HTTP client of the Handler retries
// it: once the call holding the only slot is cancelled, it is answered.
func TestOpenRetriesBusy(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild(), MaxInflight: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	c.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress-wait","arguments":{},"_meta":{"progressToken":"p"}}}`))
	if msg, err := recvRaw(c); err != nil || !strings.Contains(string(msg), "notifications/progress") {
		t.Fatalf("progress = %s, %v", msg, err)
	}
	c.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"env","arguments":{}}}`))
	for !strings.Contains(b.log.String(), "request refused with 503") {
		if ctx.Err() != nil {
			t.Fatal("the second call was not refused")
		}
		time.Sleep(5 * time.Millisecond) // polling the log for the refusal, not syncing goroutines
	}
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`))
	for {
		msg, err := recvRaw(c)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
			Error  json.RawMessage
		}
		json.Unmarshal(msg, &m)
		if string(m.ID) != "3" {
			continue
		}
		if m.Result == nil {
			t.Fatalf("the busy call's answer = %s, want a result", msg)
		}
		return
	}
}

// A second initialize on an in-process session is refused, and leaves
// nothing behind: the handshake a renewal replays stays the one that
// opened the session (a refused message must not change what the next
// session is initialized with).
func TestOpenSecondInitializeLeavesHandshake(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	entryAsk(t, c, first)
	second := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"other","version":"9"}}}`
	if err := c.Send([]byte(second)); err == nil {
		t.Fatal("a second initialize was accepted")
	}
	c.mu.Lock()
	init := string(c.init)
	c.mu.Unlock()
	if init != first {
		t.Errorf("the handshake a renewal replays is now %s, want the first initialize", init)
	}
}

// A message sent before initialize is refused at once: nothing would ever
// make the session ready, and Send used to wait for that until Close.
func TestOpenSendBeforeInitialize(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := make(chan error, 1)
	go func() { sent <- c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)) }()
	select {
	case err := <-sent:
		if err == nil {
			t.Error("a request before initialize was accepted")
		}
	case <-time.After(10 * time.Second): // a wide margin: the answer is immediate
		c.Close()
		t.Fatal("Send before initialize did not return")
	}
}

// A re-GET of the standalone stream that the Handler refuses while the
// session lives (here as another principal's, during a drain) leaves the
// Conn without a standalone stream, not ended: the call in flight is
// still answered through Recv.
func TestOpenListenRefusedKeepsConn(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild(), AccessLog: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	s := b.sessions.lookup(c.sid)
	c.mu.Unlock()
	var get *stream.Sink
	for get == nil || b.InFlight() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the call and the standalone stream did not start")
		}
		time.Sleep(5 * time.Millisecond) // polling the Handler's state, not syncing goroutines
		s.mu.Lock()
		get = s.get
		s.mu.Unlock()
	}
	b.Refuse()
	s.owner = auth.OAuthPrincipal("someone else") // before the stream ends: the re-GET is refused (404)
	get.End()
	for !strings.Contains(b.log.String(), `"status":404`) {
		if ctx.Err() != nil {
			t.Fatal("the standalone stream was not opened again")
		}
		time.Sleep(5 * time.Millisecond) // polling the access log, not syncing goroutines
	}
	s.owner = auth.Principal{} // the session's own again, for the release below
	select {
	case <-c.gone:
		t.Fatal("the refused re-GET ended the Conn")
	default:
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"release","arguments":{}}}`)); err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for len(answered) < 2 {
		msg, err := recvRaw(c)
		if err != nil {
			t.Fatalf("Recv: %v (answered %v)", err, answered)
		}
		var m struct{ ID json.RawMessage }
		json.Unmarshal(msg, &m)
		answered[string(m.ID)] = true
	}
}

// Each message of an in-process session is parsed once in each
// direction: Send parses the client's, the child's reader the child's,
// and Recv hands that parse on instead of parsing again — for a call's
// answer and progress (routed by the call) as for the child's own request
// (routed by the session).
func TestOpenParsesOnce(t *testing.T) {
	b := startBridge(t, Config{ChildProtocol: ChildLegacy, Command: testChild()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	var mu sync.Mutex
	parses := map[string]int{}
	stop := wire.ObserveParses(func(raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range []string{`"ask-roots"`, `"roots/list"`, `\"uri\"`, `"notifications/progress"`} {
			if strings.Contains(string(raw), k) {
				parses[k]++
			}
		}
	})
	defer stop()
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-roots","arguments":{}}}`)); err != nil {
		t.Fatal(err)
	}
	ask, err := recvRaw(c)
	if err != nil {
		t.Fatal(err)
	}
	var req struct{ ID json.RawMessage }
	json.Unmarshal(ask, &req)
	res := entryAsk(t, c, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"roots":[{"uri":"file:///entry-root"}]}}`)
	if !strings.Contains(fmt.Sprint(res), "entry-root") {
		t.Fatalf("tools/call = %v", res)
	}
	c.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress-wait","arguments":{},"_meta":{"progressToken":"tok-9"}}}`))
	if msg, err := recvRaw(c); err != nil || !strings.Contains(string(msg), "tok-9") {
		t.Fatalf("progress = %s, %v", msg, err)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	// The call: by Send. The child's roots/list, its answer to the call
	// (the roots as its text) and its progress: by the child's reader.
	// (The client's answer to roots/list is parsed by Send and again by
	// the session's relay, as an HTTP client's is: not counted here.)
	want := map[string]int{`"ask-roots"`: 1, `"roots/list"`: 1, `\"uri\"`: 1, `"notifications/progress"`: 1}
	if !maps.Equal(parses, want) {
		t.Errorf("parses = %v, want %v", parses, want)
	}
}
