package connect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// TestTaskRequestsCarryMcpName: SEP-2663 §Streamable HTTP: Routing
// Headers — "When tasks/get, tasks/update, or tasks/cancel is sent over the
// Streamable HTTP transport, the client MUST set the Mcp-Name header ... to
// the value of params.taskId" (Base64-encoded when it is not plain ASCII,
// like any Mcp-Name). The remote echoes the headers it got.
func TestTaskRequestsCarryMcpName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		answer(w, r, body, `{"resultType":"complete","method":`+strconv.Quote(r.Header.Get("Mcp-Method"))+`,"name":`+strconv.Quote(r.Header.Get("Mcp-Name"))+`}`)
	}))
	defer srv.Close()
	h := startHost(t, Config{URL: srv.URL})
	for i, tc := range []struct{ method, taskID, extra string }{
		{"tasks/get", "786512e2-9e0d-44bd-8f29-789f320fe840", ""},
		{"tasks/update", "task-2", `"inputResponses":{},`},
		{"tasks/cancel", "tâche", ""},
	} {
		id := strconv.Itoa(i + 1)
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"taskId":%q,%s%s}}`, id, tc.method, tc.taskID, tc.extra, meta))
		resp, _ := h.response(id, 5*time.Second)
		r, _ := resp["result"].(map[string]any)
		got, err := wire.DecodeHeaderValue(fmt.Sprint(r["name"]))
		if r == nil || r["method"] != tc.method || err != nil || got != tc.taskID {
			t.Errorf("%s: remote saw %v, want Mcp-Name %q", tc.method, resp, tc.taskID)
		}
	}
}
