//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// modernRootsCall calls server-everything's get-roots-list through the
// bridge as a raw 2026-07-28 client that declares roots and answers every
// roots/list input request with its own root. It returns the tool's text,
// or the JSON-RPC error.
func modernRootsCall(t *testing.T, url, token, who string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"` + who + `","version":"1"}}`
	extra := ""
	for round := 1; round <= 4; round++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-roots-list","arguments":{}%s,%s}}`, round, extra, meta)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "get-roots-list")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
			// A principal's child starts on first use (node takes seconds on
			// a loaded machine): do what the bridge asks, retry.
			resp.Body.Close()
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				t.Fatalf("%s: the child never became ready", who)
			}
			round--
			continue
		}
		var last string
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, fmt.Sprintf(`"id":%d`, round)) {
					last = d
				}
			}
		} else {
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				b.WriteString(sc.Text())
			}
			last = b.String()
		}
		resp.Body.Close()
		var m struct {
			Result *struct {
				ResultType    string                     `json:"resultType"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  json.RawMessage            `json:"requestState"`
				Content       []struct{ Text string }    `json:"content"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(last), &m); err != nil {
			t.Fatalf("%s: %d %q: %v", who, resp.StatusCode, last, err)
		}
		switch {
		case m.Error != nil:
			return "error: " + string(m.Error)
		case m.Result == nil:
			t.Fatalf("%s: %s", who, last)
		case m.Result.ResultType != "input_required":
			var sb strings.Builder
			for _, c := range m.Result.Content {
				sb.WriteString(c.Text)
			}
			return sb.String()
		}
		answers := map[string]any{}
		for k, v := range m.Result.InputRequests {
			if !strings.Contains(string(v), `"roots/list"`) {
				t.Fatalf("%s was asked %s", who, v)
			}
			answers[k] = map[string]any{"roots": []any{map[string]any{"uri": "file:///home/" + who, "name": who + "-root"}}}
		}
		a, _ := json.Marshal(answers)
		extra = `,"inputResponses":` + string(a) + `,"requestState":` + string(m.Result.RequestState)
	}
	t.Fatalf("%s: input_required without end", who)
	return ""
}

// Two 2026-07-28 clients through mcp-bridge serve in front of
// server-everything, a legacy-only server that asks a client for its roots
// once per connection and caches them (get-roots-list): the second client
// never sees the first one's roots. Shared (the default), the child is
// offered no roots capability, so there is nothing to cache; with a child
// per principal (two tokens), each token's child asks its own client.
//
// The child's era is pinned: on a loaded machine the era probe may time out
// and take the child for dual-era, and this test is about what a
// legacy-only child is told.
func TestModernClientsRootsNotSharedServerEverything(t *testing.T) {
	pinned := []string{"--child-protocol", "legacy"}
	t.Run("shared", func(t *testing.T) {
		b := startBridge(t, serveOpts{Child: serverEverythingStdio(), Flags: pinned})
		alice := modernRootsCall(t, b.URL, "", "alice")
		bob := modernRootsCall(t, b.URL, "", "bob")
		t.Logf("alice: %.120q; bob: %.120q", alice, bob)
		if strings.Contains(bob, "alice") || strings.Contains(alice, "file:///home/") {
			t.Errorf("a shared child got roots: alice %q, bob %q", alice, bob)
		}
		if strings.Contains(b.log(), `"method":"roots/list"`) && !strings.Contains(b.log(), "not offered") && !strings.Contains(b.log(), "refused") {
			t.Errorf("the shared child's roots/list was not refused")
		}
	})
	t.Run("principal", func(t *testing.T) {
		b := startBridge(t, serveOpts{Child: serverEverythingStdio(), Flags: append([]string{"--child-per", "principal"}, pinned...),
			Env: []string{"MCP_BRIDGE_AUTH_TOKEN=tok-alice-0123,tok-bob-4567"}})
		alice := modernRootsCall(t, b.URL, "tok-alice-0123", "alice")
		if !strings.Contains(alice, "file:///home/alice") {
			t.Fatalf("alice: %q, want her roots", alice)
		}
		bob := modernRootsCall(t, b.URL, "tok-bob-4567", "bob")
		if strings.Contains(bob, "alice") || !strings.Contains(bob, "file:///home/bob") {
			t.Errorf("bob: %q, want his own roots and never alice's", bob)
		}
		if again := modernRootsCall(t, b.URL, "tok-alice-0123", "alice"); !strings.Contains(again, "file:///home/alice") {
			t.Errorf("alice again: %q", again)
		}
		if strings.Contains(b.log(), "tok-alice-0123") || strings.Contains(b.log(), "tok-bob-4567") {
			t.Error("a token was logged")
		}
	})
}
