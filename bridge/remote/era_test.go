package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
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
		want    translate.Era
		version string
	}{
		{"401 is auth, not era evidence", 401, nil, translate.EraUnknown, ""},
		{"403 is auth, not era evidence", 403, rpc(-32022, `{"supported":["2026-07-28"]}`), translate.EraUnknown, ""},
		{"-32022 with a modern version", 400, rpc(-32022, `{"supported":["2026-07-28","2025-11-25"]}`), translate.EraModern, "2026-07-28"},
		{"-32022 with a later modern version only", 400, rpc(-32022, `{"supported":["2027-03-01"]}`), translate.EraModern, "2027-03-01"},
		{"-32022 with 2025 versions only (stateful Go SDK, mcp-go)", 400, rpc(-32022, `{"supported":["2025-11-25","2025-06-18"]}`), translate.EraLegacy, ""},
		{"-32020 header mismatch", 400, rpc(-32020, ""), translate.EraModern, "2026-07-28"},
		{"-32021 missing capability", 400, rpc(-32021, `{"requiredCapabilities":{}}`), translate.EraModern, "2026-07-28"},
		{"-32602 missing _meta field", 400, rpc(-32602, ""), translate.EraModern, "2026-07-28"},
		{"404 -32601 unknown method", 404, rpc(-32601, ""), translate.EraModern, "2026-07-28"},
		{"404 -32601 to server/discover (supergateway)", 404, rpc(-32601, ""), translate.EraLegacy, ""},
		{"400 plain text", 400, []byte("Bad Request: Server not initialized"), translate.EraLegacy, ""},
		{"400 legacy JSON-RPC error", 400, rpc(-32000, ""), translate.EraLegacy, ""},
		{"404 empty", 404, nil, translate.EraLegacy, ""},
		{"405", 405, nil, translate.EraLegacy, ""},
		{"500 is an outage", 500, rpc(-32603, ""), translate.EraUnknown, ""},
		{"503 is an outage", 503, nil, translate.EraUnknown, ""},
		{"429 is an outage", 429, nil, translate.EraUnknown, ""},
	}
	for _, tt := range tests {
		method := "tools/call"
		if strings.Contains(tt.name, "server/discover") {
			method = "server/discover"
		}
		d := translate.Decide(StatusEvidence(&httpclient.StatusError{StatusCode: tt.status, Body: tt.body}, method, true))
		if v, ver := d.Era, d.Version; v != tt.want || ver != tt.version {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, v, ver, tt.want, tt.version)
		}
	}
	for _, tt := range []struct {
		resp string
		want translate.Era
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{}}}`, translate.EraModern},
		{`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{}}}`, translate.EraLegacy},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, translate.EraLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, translate.EraLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"method invalid during session initialization"}}`, translate.EraLegacy},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"supported":["2026-07-28"]}}}`, translate.EraModern},
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
		verdict translate.Era
	}{
		{"/auth", "401", translate.EraUnknown},
		{"/down", "503", translate.EraUnknown},
		{"/legacy", "", translate.EraLegacy},
		{"/future", "", translate.EraModern},
	} {
		r, _ := New(Config{URL: srv.URL + tc.path, MaxRetries: -1})
		pr, err := r.Probe(ctx, nil, nil)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %s", tc.path, err, tc.err)
		case tc.err == "" && (err != nil || pr.Verdict != tc.verdict):
			t.Errorf("%s: %v, %v; want %v", tc.path, pr.Verdict, err, tc.verdict)
		}
		if tc.verdict == translate.EraModern && (pr.Version != "2027-03-01" || pr.Result == nil) {
			t.Errorf("%s: version %q, result %s", tc.path, pr.Version, pr.Result)
		}
		if tc.verdict != translate.EraUnknown {
			r.SetVerdict(pr.Verdict)
		}
		if got := r.Verdict(); got != tc.verdict {
			t.Errorf("%s: cached %v, want %v", tc.path, got, tc.verdict)
		}
	}
	if strings.Join(versions, ",") != "2026-07-28,2027-03-01" {
		t.Errorf("probe versions %v, want a retry with the version -32022 named", versions)
	}
}

// The hand-rolled remotes answer through testmain's helpers.
var (
	answer   = testmain.Answer
	readBody = testmain.ReadBody
	jsonErr  = testmain.JSONErr
)
