package connect

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// auto: a legacy host's initialize refused by a modern-only server (400
// naming only 2026-07-28) is probed and translated.
func TestDetectLegacyHostInitializeRefused(t *testing.T) {
	rm := &rawModern{change: make(chan string)}
	srv := httptest.NewServer(rm)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"lh","version":"1"}}}`)
	init, _ := h.response("0", 10*time.Second)
	if dig(init, "result", "protocolVersion") != "2025-11-25" || dig(init, "result", "serverInfo", "name") != "raw-modern" {
		t.Fatalf("initialize %v, want the newest legacy version and the remote's discovery", init)
	}
	if len(rm.rec.of("initialize")) != 1 || len(rm.rec.of("server/discover")) != 1 {
		t.Errorf("remote saw %d initialize, %d discover; want one each", len(rm.rec.of("initialize")), len(rm.rec.of("server/discover")))
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r, _ := h.response("1", 10*time.Second); dig(r, "result", "tools") == nil {
		t.Errorf("tools/list %v", r)
	}
	rm.rec.wait(t, "subscriptions/listen", 1)
}

// auto: 401 to a legacy initialize is an auth problem: the host is told,
// nothing is probed or cached.
func TestDetectAuthIsNoEvidence(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		posts.Add(1)
		http.Error(w, "token please", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lh","version":"1"}}}`)
	r, _ := h.response("0", 10*time.Second)
	if !contains(errorMessage(r), "401") {
		t.Errorf("initialize: %v, want the 401 reported", r)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1 (no probe)", n)
	}
	if v := remote.CachedEra(srv.URL); v != verdictUnknown {
		t.Errorf("cached %v after a 401", v)
	}
}

// auto: a modern host against a legacy server that answers modern requests
// with a plain 404 (no version list): the probe confirms, translation
// follows. A later session on the same endpoint starts translated.
func TestDetectModernHostPlain404(t *testing.T) {
	rl := newRawLegacy()
	var modern atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body := readBody(r)
			var m wire.Message
			wire.Parse(body, &m)
			if m.IsModern() {
				modern.Add(1)
				http.Error(w, "404 page not found", http.StatusNotFound)
				return
			}
			r.Body = readCloser(body)
		}
		rl.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for session := range 2 {
		v := remote.CachedEra(srv.URL)
		h := startHost(t, Config{URL: srv.URL})
		if v != verdictUnknown {
			remote.CacheEra(srv.URL, v) // this test is about the cache
		}
		h.send(discover)
		r, _ := h.response("1", 10*time.Second)
		if dig(r, "result", "_meta", wire.MetaServerInfo, "name") != "raw-legacy" {
			t.Fatalf("session %d: discover %v", session, r)
		}
		h.close()
		if n, want := modern.Load(), int32(2); n != want {
			t.Errorf("session %d: %d modern requests reached the remote, want %d (the host's, the probe)", session, n, want)
		}
	}
}

// auto: an outage says nothing about the era.
func TestDetectOutageIsNoEvidence(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, MaxRetries: -1})
	h.send(modernCall("1", "x"))
	if r, _ := h.response("1", 10*time.Second); !contains(errorMessage(r), "502") {
		t.Errorf("got %v, want the 502 reported", r)
	}
	if v := remote.CachedEra(srv.URL); v != verdictUnknown {
		t.Errorf("cached %v after a 502", v)
	}
}

// pinned: --protocol legacy translates a modern host from the first
// request, without sending it anything modern.
func TestPinnedLegacyModernHost(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy})
	h.send(modernCall("1", "other"))
	if r, _ := h.response("1", 10*time.Second); dig(r, "result", "resultType") != "complete" {
		t.Errorf("call: %v", r)
	}
	for _, s := range rl.rec.all {
		if strings.Contains(s.body, wire.MetaProtocolVersion) {
			t.Errorf("a modern message reached the legacy remote: %s", s.body)
		}
	}
}

// auto: a modern host against a legacy server that answers server/discover
// the way supergateway 4.0.0 does, HTTP 404 with a JSON-RPC -32601. That
// is a legacy server (a 2026-07-28 one "MUST implement" server/discover):
// the host's discover is answered from a legacy session.
func TestDetectModernHostDiscover404MethodNotFound(t *testing.T) {
	rl := newRawLegacy()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body := readBody(r)
			var m wire.Message
			wire.Parse(body, &m)
			if m.Method == "server/discover" {
				jsonErr(w, http.StatusNotFound, m.IDBytes(), wire.CodeMethodNotFound, "Method not found", "")
				return
			}
			r.Body = readCloser(body)
		}
		rl.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r, _ := h.response("1", 10*time.Second)
	if dig(r, "result", "_meta", wire.MetaServerInfo, "name") != "raw-legacy" || jsonText(dig(r, "result", "supportedVersions")) != `["2026-07-28"]` {
		t.Fatalf("discover through a legacy server that says 404 -32601: %v, want it answered from a legacy session", r)
	}
	h.close()
}

// auto: a modern host whose first request is not server/discover, against
// a legacy server that answers requests in the 2026-07-28 envelope in
// 2025 shape (no resultType) and server/discover with 404 -32601, as
// supergateway 4.0.0 does. A 2025-shaped answer is no evidence of a modern
// remote: the probe decides (legacy), the held answers are completed
// (resultType, cache hints), not sent again, and the next requests are
// translated.
func TestDetectModernHostLegacyShapedAnswer(t *testing.T) {
	rl := newRawLegacy()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body := readBody(r)
			var m wire.Message
			wire.Parse(body, &m)
			if m.Method == "tools/call" {
				calls.Add(1)
			}
			switch {
			case m.Method == "server/discover":
				jsonErr(w, http.StatusNotFound, m.IDBytes(), wire.CodeMethodNotFound, "Method not found", "")
				return
			case m.IsModern() && m.Method == "tools/list":
				answer(w, r, body, `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)
				return
			case m.IsModern():
				answer(w, r, body, `{"content":[{"type":"text","text":"once"}]}`)
				return
			}
			r.Body = readCloser(body)
		}
		rl.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h := startHost(t, Config{URL: srv.URL})
	h.send(modernCall("1", "x"))
	r, _ := h.response("1", 10*time.Second)
	if dig(r, "result", "resultType") != "complete" || !strings.Contains(jsonText(r["result"]), "once") {
		t.Fatalf("a call answered in 2025 shape came out as %v, want the answer completed with resultType", r)
	}
	if v := remote.CachedEra(srv.URL); v != verdictLegacy {
		t.Errorf("cached verdict %v, want legacy", v)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`)
	if r, _ := h.response("2", 10*time.Second); dig(r, "result", "resultType") != "complete" || dig(r, "result", "ttlMs") == nil {
		t.Errorf("tools/list after detection: %v", r)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d tools/call reached the remote, want 1: a call already carried out is not sent again", n)
	}
	var translated bool
	for _, s := range rl.rec.all {
		translated = translated || (strings.Contains(s.body, `"tools/list"`) && !strings.Contains(s.body, wire.MetaProtocolVersion))
	}
	if !translated {
		t.Error("tools/list after detection did not go to the remote's legacy session")
	}
}
