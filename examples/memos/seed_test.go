package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The byte strings in this file are the article's examples, compacted.

func TestSeedDiscover(t *testing.T) {
	h := startServer(t)
	h.send(mreq("1", "server/discover", ""))
	h.expect(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"Provides tools for querying Memos.","ttlMs":300000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

func TestDiscoverDynamicTools(t *testing.T) {
	h := startServer(t, "-dynamic-tools")
	h.send(mreq("1", "server/discover", ""))
	h.expect(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"Provides tools for querying Memos.","ttlMs":300000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

// articleTools is the article's tools array (lines 254-400), compacted by an
// independent tool; it is the golden value for the first two tools.
func articleTools(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/article_tools_compact.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSeedToolsList(t *testing.T) {
	h := startServer(t)
	line := h.roundTrip(mreq("2", "tools/list", ""))
	seed := articleTools(t)
	prefix := `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","tools":[` + strings.TrimSuffix(strings.TrimPrefix(seed, "["), "]") + `,`
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("tools/list does not start with the article's two tools:\n%s", line)
	}
	suffix := `],"ttlMs":300000,"cacheScope":"private",` + serverMeta + `}}`
	if !strings.HasSuffix(line, suffix) {
		t.Fatalf("tools/list has the wrong tail:\n%s", line)
	}
	var resp struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, raw := range resp.Result.Tools {
		var tool struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type                 string          `json:"type"`
				Properties           json.RawMessage `json:"properties"`
				AdditionalProperties *bool           `json:"additionalProperties"`
			} `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		if tool.InputSchema.Type != "object" || tool.InputSchema.Properties == nil ||
			tool.InputSchema.AdditionalProperties == nil || *tool.InputSchema.AdditionalProperties {
			t.Errorf("tool %s: inputSchema must be an object with properties and additionalProperties:false", tool.Name)
		}
		names = append(names, tool.Name)
	}
	want := "memo_list_memos,auth_get_current_user,memo_export_memos,memo_delete_memo,memo_debug_stats"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("tools = %s, want %s", got, want)
	}
	if strings.Contains(line, `\u003c`) || !strings.Contains(line, "list<string>") {
		t.Fatalf("tools/list must not HTML-escape: %s", line)
	}
}

// TestSeedToolsMatchArticle re-derives the golden file from the article's
// tools/list response, kept verbatim (pretty-printed as the article prints it)
// in the repository's testdata/seeds.
func TestSeedToolsMatchArticle(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/seeds/list-2.response.json")
	if err != nil {
		t.Fatal(err)
	}
	// Cut the tools array out of the raw (key-ordered) text.
	i := bytes.Index(raw, []byte(`"tools": [`))
	j := bytes.Index(raw, []byte("\n    ],\n"))
	if i < 0 || j < 0 {
		t.Fatal("tools array not found")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw[i+len(`"tools": `):j+len("\n    ]")]); err != nil {
		t.Fatal(err)
	}
	if buf.String() != articleTools(t) {
		t.Fatalf("golden file differs from the article")
	}
}

func TestSeedCallPublicMemo(t *testing.T) {
	h := startServer(t)
	h.send(mcall("3", "memo_list_memos", `{"pageSize":1,"filter":"visibility != \"PRIVATE\"","orderBy":"create_time desc"}`))
	h.expect(`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"memos\":[{\"name\":\"memos/example-public-memo\",\"state\":\"NORMAL\",\"content\":\"这是一条公开的示例 memo。\",\"visibility\":\"PUBLIC\"}]}"}],"structuredContent":{"memos":[{"name":"memos/example-public-memo","state":"NORMAL","content":"这是一条公开的示例 memo。","visibility":"PUBLIC"}]},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

func TestSeedEmptyDataset(t *testing.T) {
	h := startServer(t, "-dataset", "empty")
	h.send(mcall("0", "memo_list_memos", `{"pageSize":1,"filter":"visibility != \"PRIVATE\""}`))
	h.expect(`{"jsonrpc":"2.0","id":0,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"memos\":[]}"}],"structuredContent":{"memos":[]},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

func TestSeedProgress(t *testing.T) {
	h := startServer(t, "-dataset", "empty")
	h.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1,"filter":"visibility != \"PRIVATE\""},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"memos-demo-client","version":"1.0.0"},"progressToken":"list-demo-6"}}}`)
	h.expect(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"list-demo-6","progress":1,"total":2}}`)
	h.expect(`{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"memos\":[]}"}],"structuredContent":{"memos":[]},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

func TestSeedUnknownTool(t *testing.T) {
	h := startServer(t)
	h.send(mcall("4", "memo_unknown_tool", `{}`))
	h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Unknown tool: memo_unknown_tool"}}`)
}

func TestSeedInvalidFilter(t *testing.T) {
	h := startServer(t)
	h.send(mcall("5", "memo_list_memos", `{"filter":"visibility"}`))
	h.expect(`{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","content":[{"type":"text","text":"Invalid filter expression: expected a comparison after visibility."}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`)
}

func TestLegacyInvalidFilter(t *testing.T) {
	h := startServer(t)
	h.roundTrip(initialize("1", "2025-11-25", `{}`))
	h.send(lcall("5", "memo_list_memos", `{"filter":"visibility"}`))
	h.expect(`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Invalid filter expression: expected a comparison after visibility."}],"isError":true}}`)
}

func TestCurrentUser(t *testing.T) {
	h := startServer(t)
	h.send(mcall("9", "auth_get_current_user", `{}`))
	user := `{"user":{"name":"users/1","username":"demo","role":"ADMIN","displayName":"Demo User"}}`
	h.expect(modernResult("9", user, user, false))
}

func TestNoHTMLEscaping(t *testing.T) {
	h := startServer(t)
	line := h.roundTrip(mcall("1", "memo_list_memos", `{"filter":"has_code || content.contains(\"&\")"}`))
	for _, want := range []string{`<hello>`, `sharing & offline`} {
		if !strings.Contains(line, want) {
			t.Errorf("missing %q in %s", want, line)
		}
	}
	if strings.Contains(line, `\u003c`) || strings.Contains(line, `\u0026`) {
		t.Errorf("output is HTML-escaped: %s", line)
	}
}
