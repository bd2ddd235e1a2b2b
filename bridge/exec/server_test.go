package exec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A 2026-07-28 client: server/discover, then requests that each carry the
// _meta envelope and need no handshake; a bad envelope is refused the
// way the spec says.
func TestModernEra(t *testing.T) {
	c := startServer(t, toolsFile(t, `{"tools": {"fail": {"command": "PROBE", "args": ["exit", "2"], "annotations": {"readOnlyHint": true}}}}`, nil))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	r := c.response("1", 10*time.Second)
	res, _ := r["result"].(map[string]any)
	if res["resultType"] != "complete" || res["supportedVersions"].([]any)[0] != "2026-07-28" || res["ttlMs"] == nil || res["cacheScope"] != "public" {
		t.Errorf("discover: %v", r)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	r = c.response("2", 10*time.Second)
	res, _ = r["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	if res["resultType"] != "complete" || len(tools) != 1 {
		t.Fatalf("tools/list: %v", r)
	}
	tool := tools[0].(map[string]any)
	if tool["name"] != "fail" || tool["outputSchema"] == nil || tool["inputSchema"] == nil || tool["annotations"].(map[string]any)["readOnlyHint"] != true {
		t.Errorf("tool %v", tool)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{},` + modernMeta + `}}`)
	r = c.response("3", 30*time.Second)
	res, _ = r["result"].(map[string]any)
	if res["resultType"] != "complete" || res["isError"] != true || structuredOf(t, r)["exitCode"] != float64(2) {
		t.Errorf("tools/call: %v", r)
	}
	for i, tc := range []struct {
		id   string
		msg  string
		code float64
		want string
	}{
		{"10", `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, -32022, "Unsupported protocol version"},
		{"11", `{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, -32602, "clientCapabilities"},
		{"12", `{"jsonrpc":"2.0","id":12,"method":"server/discover","params":{}}`, -32602, "protocolVersion"},
		{"13", `{"jsonrpc":"2.0","id":13,"method":"ping","params":{` + modernMeta + `}}`, -32601, "Method not found"},
		{"14", `{"jsonrpc":"2.0","id":14,"method":"tools/list"}`, -32600, "not initialized"},
	} {
		c.send(tc.msg)
		r := c.response(tc.id, 10*time.Second)
		if code, msg := errorOf(r); code != tc.code || !strings.Contains(msg, tc.want) {
			t.Errorf("case %d: %v, want %v %q", i, r["error"], tc.code, tc.want)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r = c.response("10", 10*time.Second)
	data, _ := json.Marshal(r["error"].(map[string]any)["data"])
	if string(data) != `{"requested":"2099-01-01","supported":["2026-07-28"]}` {
		t.Errorf("-32022 data %s", data)
	}
}

// A 2025 client: initialize negotiates a handshake version, and malformed
// input gets the JSON-RPC errors.
func TestLegacyEra(t *testing.T) {
	c := startServer(t, toolsFile(t, `{"tools": {"ok": {"command": "PROBE", "args": ["exit", "0"]}}}`, nil))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r := c.response("1", 10*time.Second)
	res, _ := r["result"].(map[string]any)
	if res["protocolVersion"] != "2025-06-18" || res["capabilities"].(map[string]any)["tools"] == nil {
		t.Errorf("initialize: %v", r)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	r = c.response("2", 10*time.Second)
	res, _ = r["result"].(map[string]any)
	if _, has := res["resultType"]; has || len(res["tools"].([]any)) != 1 {
		t.Errorf("legacy tools/list: %v", r)
	}
	r = c.callTool(3, "ok", `{}`, 30*time.Second)
	if res := r["result"].(map[string]any); res["isError"] != false {
		t.Errorf("exit 0: %v", res)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	c.response("4", 10*time.Second)
	c.send(`not json`)
	if code, _ := errorOf(c.response("null", 10*time.Second)); code != -32700 {
		t.Error("no parse error for a non-JSON line")
	}
	c.send(`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`)
	if code, msg := errorOf(c.response("null", 10*time.Second)); code != -32600 || !strings.Contains(msg, "batches") {
		t.Error("a batch was not refused")
	}
}
