package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestTaskProgressReachesOwner: the progress a shared legacy child reports
// for a task after its tools/call was answered (2025-11-25: the token
// "remains valid throughout the task lifetime") reaches the session that
// created the task, under that session's own token, and no other
// session; without the bridge keeping the route, it is dropped.
func TestTaskProgressReachesOwner(t *testing.T) {
	b := startBridge(t, Config{Command: tasksChild(), ChildProtocol: ChildLegacy, SessionMode: SessionShared, AuthTokens: []string{"token-a", "token-b"}})
	a := &taskClient{t: t, url: b.URL, token: "token-a"}
	a.sid = legacyInit(t, b.URL, "Bearer token-a", "2025-11-25")
	bb := &taskClient{t: t, url: b.URL, token: "token-b"}
	bb.sid = legacyInit(t, b.URL, "Bearer token-b", "2025-11-25")

	r := okResult(t, "A creates", a.call("tools/call", `"name":"slow","arguments":{},"task":{},"_meta":{"progressToken":"a-progress"}`))
	id, _ := r["task"].(map[string]any)["taskId"].(string)
	if id == "" {
		t.Fatalf("CreateTaskResult: %v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	streams := map[*taskClient]chan sseEvent{}
	for _, c := range []*taskClient{a, bb} {
		_, ch := openSSE(t, ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": c.sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + c.token})
		streams[c] = ch
	}
	// The child reports progress on the task, then a list_changed every
	// session gets.
	okResult(t, "A tasks/get", a.call("tasks/get", `"taskId":"`+id+`"`))
	for c, ch := range streams {
		var seen []string
		for ev := range ch {
			var m struct {
				Method string
				Params struct {
					ProgressToken any `json:"progressToken"`
				}
			}
			json.Unmarshal([]byte(ev.data), &m)
			if m.Method == "notifications/tools/list_changed" {
				break
			}
			if m.Method != "" {
				seen = append(seen, fmt.Sprint(m.Method, " ", m.Params.ProgressToken))
			}
		}
		want := "[]"
		if c == a {
			want = "[notifications/progress a-progress]"
		}
		if fmt.Sprint(seen) != want {
			t.Errorf("session of %s got %v before list_changed, want %s", c.token, seen, want)
		}
	}
}
