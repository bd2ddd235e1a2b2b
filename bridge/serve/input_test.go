package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Each bad input gets its status and JSON-RPC error code, and the bridge
// keeps serving.
func TestBadInputs(t *testing.T) {
	b := startBridge(t, Config{AuthToken: "s3cret", MaxBody: 4096, CheckHost: true, AllowedOrigins: []string{"https://app.example.com"}}, bins["memos"])
	auth := "Bearer s3cret"
	good := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1},` + modernMeta + `}}`
	withHdr := func(over map[string]string) map[string]string {
		h := modernHeaders("tools/call", "memo_list_memos")
		h["Authorization"] = auth
		for k, v := range over {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   float64 // 0: no JSON-RPC body expected
	}{
		{"no token", good, withHdr(map[string]string{"Authorization": ""}), 401, -32600},
		{"wrong token", good, withHdr(map[string]string{"Authorization": "Bearer nope"}), 401, -32600},
		{"foreign origin", good, withHdr(map[string]string{"Origin": "https://evil.example.com"}), 403, -32600},
		{"foreign host (DNS rebinding)", good, withHdr(map[string]string{"Host": "evil.example.com"}), 403, -32600},
		{"wrong content type", good, withHdr(map[string]string{"Content-Type": "text/plain"}), 415, -32600},
		{"wrong accept", good, withHdr(map[string]string{"Accept": "application/json"}), 406, -32600},
		{"body too large", strings.Repeat(" ", 5000) + good, withHdr(nil), 413, -32600},
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,`, withHdr(nil), 400, -32700},
		{"no version header", good, withHdr(map[string]string{"MCP-Protocol-Version": ""}), 400, -32020},
		{"version header mismatch", good, withHdr(map[string]string{"MCP-Protocol-Version": "2025-11-25"}), 400, -32020},
		{"method header mismatch", good, withHdr(map[string]string{"Mcp-Method": "tools/list"}), 400, -32020},
		{"method header case", good, withHdr(map[string]string{"Mcp-Method": "TOOLS/CALL"}), 400, -32020},
		{"name header missing", good, withHdr(map[string]string{"Mcp-Name": ""}), 400, -32020},
		{"name header mismatch", good, withHdr(map[string]string{"Mcp-Name": "auth_get_current_user"}), 400, -32020},
		{"name header bad base64", good, withHdr(map[string]string{"Mcp-Name": "=?base64?!!?="}), 400, -32020},
		{"unsupported version", strings.ReplaceAll(good, "2026-07-28", "2099-01-01"), withHdr(map[string]string{"MCP-Protocol-Version": "2099-01-01"}), 400, -32022},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{` + modernMeta + `}}`, withHdr(map[string]string{"Mcp-Method": "nope/nope", "Mcp-Name": ""}), 404, -32601},
		{"missing clientCapabilities", strings.Replace(good, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1), withHdr(nil), 400, -32602},
		{"legacy request without session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, withHdr(nil), 400, -32000},
		{"unknown session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, withHdr(map[string]string{"Mcp-Session-Id": "deadbeef"}), 404, -32001},
		{"null id", `{"jsonrpc":"2.0","id":true,"method":"tools/list","params":{` + modernMeta + `}}`, withHdr(map[string]string{"Mcp-Method": "tools/list"}), 400, -32600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawPost(t, b.URL, tt.body, tt.hdr)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %s)", resp.StatusCode, tt.status, body)
			}
			if tt.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer WWW-Authenticate challenge")
			}
			var m struct {
				Error struct{ Code float64 } `json:"error"`
			}
			if err := json.Unmarshal(body, &m); err != nil || m.Error.Code != tt.code {
				t.Errorf("body %s, want JSON-RPC error code %v", body, tt.code)
			}
		})
	}
	// The token never appears in the logs.
	if strings.Contains(b.log.String(), "s3cret") {
		t.Error("the auth token was logged")
	}
	// The supported versions come from the child's server/discover.
	resp, body := rawPost(t, b.URL, strings.ReplaceAll(good, "2026-07-28", "2099-01-01"), withHdr(map[string]string{"MCP-Protocol-Version": "2099-01-01"}))
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"supported":["2026-07-28"]`) || !strings.Contains(string(body), `"requested":"2099-01-01"`) {
		t.Errorf("-32022 body %s lacks the child's supported versions", body)
	}
	// ... and after all that, a good request still works; an allowed
	// cross-origin browser gets CORS headers.
	resp, body = rawPost(t, b.URL, good, withHdr(map[string]string{"Origin": "https://app.example.com"}))
	if resp.StatusCode != 200 || !strings.Contains(string(body), "memos/") {
		t.Fatalf("good request after bad ones: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("CORS headers: %v", resp.Header)
	}
}

func TestParamHeaderValidation(t *testing.T) {
	b := startBridge(t, Config{}, bins["everything"])
	call := func(args, region string) (*http.Response, []byte) {
		h := modernHeaders("tools/call", "test_x_mcp_header")
		if region != "" {
			h["Mcp-Param-Region"] = region
		}
		return rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_x_mcp_header","arguments":`+args+`,`+modernMeta+`}}`, h)
	}
	if resp, body := call(`{"region":"us-west1"}`, "us-west1"); resp.StatusCode != 200 || !strings.Contains(string(body), "region=us-west1") {
		t.Errorf("matching header: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(`{"region":"東京"}`, "=?base64?5p2x5Lqs?="); resp.StatusCode != 200 || !strings.Contains(string(body), "region=東京") {
		t.Errorf("Base64 header: %d %s", resp.StatusCode, body)
	}
	for name, c := range map[string][2]string{
		"missing":  {`{"region":"us-west1"}`, ""},
		"mismatch": {`{"region":"us-west1"}`, "eu-north1"},
		"extra":    {`{}`, "us-west1"},
	} {
		resp, body := call(c[0], c[1])
		if resp.StatusCode != 400 || !strings.Contains(string(body), "-32020") {
			t.Errorf("%s: %d %s, want 400 -32020", name, resp.StatusCode, body)
		}
	}
}

func TestMethodsAndPaths(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"])
	for _, tc := range []struct {
		method, path string
		hdr          map[string]string
		status       int
	}{
		{"PUT", "/mcp", nil, 405},
		{"GET", "/mcp", nil, 405}, // no session: no standalone stream
		{"GET", "/mcp", map[string]string{"Mcp-Session-Id": "nope"}, 404}, // unknown session
		{"DELETE", "/mcp", map[string]string{"Mcp-Session-Id": "nope"}, 404},
		{"GET", "/other", nil, 404},
		{"GET", "/healthz", nil, 200},
		{"GET", "/readyz", nil, 200},
	} {
		req, _ := http.NewRequest(tc.method, b.srv.URL+tc.path, nil)
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.hdr, resp.StatusCode, tc.status)
		}
	}
}
