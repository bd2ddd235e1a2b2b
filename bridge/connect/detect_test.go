package connect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The HTTP decision table for era detection (2026-07-28 streamable-http
// §Backward Compatibility).
func TestClassifyStatus(t *testing.T) {
	rpc := func(code int, data string) []byte {
		var d []byte
		if data != "" {
			d = []byte(data)
		}
		return wire.ErrorResponse([]byte("1"), code, "x", d)
	}
	tests := []struct {
		name    string
		status  int
		body    []byte
		want    verdict
		version string
	}{
		{"401 is auth, not era evidence", 401, nil, verdictUnknown, ""},
		{"403 is auth, not era evidence", 403, rpc(-32022, `{"supported":["2026-07-28"]}`), verdictUnknown, ""},
		{"-32022 with a modern version", 400, rpc(-32022, `{"supported":["2026-07-28","2025-11-25"]}`), verdictModern, "2026-07-28"},
		{"-32022 with a later modern version only", 400, rpc(-32022, `{"supported":["2027-03-01"]}`), verdictModern, "2027-03-01"},
		{"-32022 with 2025 versions only (stateful Go SDK, mcp-go)", 400, rpc(-32022, `{"supported":["2025-11-25","2025-06-18"]}`), verdictLegacy, ""},
		{"-32020 header mismatch", 400, rpc(-32020, ""), verdictModern, "2026-07-28"},
		{"-32021 missing capability", 400, rpc(-32021, `{"requiredCapabilities":{}}`), verdictModern, "2026-07-28"},
		{"-32602 missing _meta field", 400, rpc(-32602, ""), verdictModern, "2026-07-28"},
		{"404 -32601 unknown method", 404, rpc(-32601, ""), verdictModern, "2026-07-28"},
		{"404 -32601 to server/discover (supergateway)", 404, rpc(-32601, ""), verdictLegacy, ""},
		{"400 plain text", 400, []byte("Bad Request: Server not initialized"), verdictLegacy, ""},
		{"400 legacy JSON-RPC error", 400, rpc(-32000, ""), verdictLegacy, ""},
		{"404 empty", 404, nil, verdictLegacy, ""},
		{"405", 405, nil, verdictLegacy, ""},
		{"500 is an outage", 500, rpc(-32603, ""), verdictUnknown, ""},
		{"503 is an outage", 503, nil, verdictUnknown, ""},
		{"429 is an outage", 429, nil, verdictUnknown, ""},
	}
	for _, tt := range tests {
		method := "tools/call"
		if strings.Contains(tt.name, "server/discover") {
			method = "server/discover"
		}
		d := translate.Decide(statusEvidence(&httpclient.StatusError{StatusCode: tt.status, Body: tt.body}, method, true))
		if v, ver := d.Era, d.Version; v != tt.want || ver != tt.version {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, v, ver, tt.want, tt.version)
		}
	}
	for _, tt := range []struct {
		resp string
		want verdict
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{}}}`, verdictModern},
		{`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{}}}`, verdictLegacy},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, verdictLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, verdictLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"method invalid during session initialization"}}`, verdictLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"supported":["2026-07-28"]}}}`, verdictModern},
	} {
		var m wire.Message
		if err := wire.Parse([]byte(tt.resp), &m); err != nil {
			t.Fatal(err)
		}
		if v := translate.Decide(translate.ResponseEvidence("server/discover", true, &m)).Era; v != tt.want {
			t.Errorf("discover answer %s: got %v, want %v", tt.resp, v, tt.want)
		}
	}
}

// Probes: a verdict is cached per endpoint; auth trouble and outages are
// reported, never cached; -32022 naming another modern version is retried
// with it.
func TestProbe(t *testing.T) {
	var versions []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		switch r.URL.Path {
		case "/auth":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="x"`)
			http.Error(w, "token please", http.StatusUnauthorized)
		case "/down":
			http.Error(w, "down", http.StatusServiceUnavailable)
		case "/legacy":
			http.Error(w, "not found", http.StatusNotFound)
		case "/future":
			versions = append(versions, r.Header.Get("MCP-Protocol-Version"))
			if m.ProtocolVersion != "2027-03-01" {
				jsonErr(w, 400, m.IDBytes(), wire.CodeUnsupportedVersion, "unsupported", `{"supported":["2027-03-01"]}`)
				return
			}
			answer(w, r, body, `{"resultType":"complete","supportedVersions":["2027-03-01"],"capabilities":{}}`)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		path    string
		err     string
		verdict verdict
	}{
		{"/auth", "401", verdictUnknown},
		{"/down", "503", verdictUnknown},
		{"/legacy", "", verdictLegacy},
		{"/future", "", verdictModern},
	} {
		b, _ := New(Config{URL: srv.URL + tc.path, MaxRetries: -1})
		pr, err := b.probe(ctx, nil, nil)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %s", tc.path, err, tc.err)
		case tc.err == "" && (err != nil || pr.verdict != tc.verdict):
			t.Errorf("%s: %v, %v; want %v", tc.path, pr.verdict, err, tc.verdict)
		}
		if tc.verdict == verdictModern && (pr.version != "2027-03-01" || pr.result == nil) {
			t.Errorf("%s: version %q, result %s", tc.path, pr.version, pr.result)
		}
		if tc.verdict != verdictUnknown {
			b.setVerdict(pr.verdict)
		}
		if got := b.cachedVerdict(); got != tc.verdict {
			t.Errorf("%s: cached %v, want %v", tc.path, got, tc.verdict)
		}
	}
	if strings.Join(versions, ",") != "2026-07-28,2027-03-01" {
		t.Errorf("probe versions %v, want a retry with the version -32022 named", versions)
	}
}

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
	if v, ok := eras.Load(srv.URL); ok {
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
		v, cached := eras.Load(srv.URL)
		h := startHost(t, Config{URL: srv.URL})
		if cached {
			eras.Store(srv.URL, v) // this test is about the cache
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
	if v, ok := eras.Load(srv.URL); ok {
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
	if v, _ := eras.Load(srv.URL); v != verdictLegacy {
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
