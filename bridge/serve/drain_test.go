package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Session ids name the replica that minted them, and every response says
// which replica answered: what examples/deploy/nginx routes on.
func TestReplicaID(t *testing.T) {
	if _, err := New(Config{Command: commandFor("true"), ReplicaID: "r1.x"}); err != ErrReplicaID {
		t.Errorf("ReplicaID with a dot: %v, want ErrReplicaID", err)
	}
	b := startBridge(t, Config{ReplicaID: "east-1_a"}, bins["memos"])
	resp, _ := rawPost(t, b.URL, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if rest, ok := strings.CutPrefix(sid, "east-1_a."); !ok || len(rest) != 32 {
		t.Errorf("session id %q, want east-1_a. and 32 hex digits", sid)
	}
	if got := resp.Header.Get(HeaderReplica); got != "east-1_a" {
		t.Errorf("%s: %q on initialize", HeaderReplica, got)
	}
	resp, _ = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", ""))
	if resp.StatusCode != 200 || resp.Header.Get(HeaderReplica) != "east-1_a" {
		t.Errorf("server/discover: %d, %s %q", resp.StatusCode, HeaderReplica, resp.Header.Get(HeaderReplica))
	}
}

// The drain steps: BeginDrain turns /readyz 503 and changes nothing else;
// Refuse answers new work with 503 but not a live 2025 session's requests,
// and SessionsEnded fires when its last session is deleted.
func TestDrainSteps(t *testing.T) {
	b := startBridge(t, Config{}, bins["memos"])
	base := strings.TrimSuffix(b.URL, "/mcp")
	readyz := func() int {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	resp, _ := rawPost(t, b.URL, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	sess := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess)
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1}}}`
	modern := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1},` + modernMeta + `}}`

	b.BeginDrain()
	if got := readyz(); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", got)
	}
	if resp, body := rawPost(t, b.URL, modern, modernHeaders("tools/call", "memo_list_memos")); resp.StatusCode != 200 || !strings.Contains(string(body), "memos/") {
		t.Errorf("a new request while draining: %d %s, want it served", resp.StatusCode, body)
	}
	select {
	case <-b.SessionsEnded():
		t.Fatal("SessionsEnded with a session open")
	default:
	}

	b.Refuse()
	if resp, body := rawPost(t, b.URL, modern, modernHeaders("tools/call", "memo_list_memos")); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("new work after Refuse: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, b.URL, initBody, nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("initialize after Refuse: %d %s, want 503", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, b.URL, call, sess); resp.StatusCode != 200 || !strings.Contains(string(body), "memos/") {
		t.Errorf("the live session's call after Refuse: %d %s, want it served", resp.StatusCode, body)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, b.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	select {
	case <-b.SessionsEnded():
	case <-time.After(10 * time.Second):
		t.Fatal("SessionsEnded did not fire after the last session was deleted")
	}
	if resp, _ := rawPost(t, b.URL, call, sess); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the deleted session's call after Refuse: %d, want 503", resp.StatusCode)
	}
}
