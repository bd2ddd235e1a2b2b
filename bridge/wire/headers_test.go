package wire

import "testing"

// The Tasks extension's routing header: SEP-2663 §Streamable HTTP: Routing
// Headers ("the client MUST set the Mcp-Name header ... to the value of
// params.taskId") for tasks/get, tasks/update and tasks/cancel; connect
// derives the header and serve checks it through NameValue alone.
func TestNameValueTasks(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		want   string
		needed bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1"}}`, "t-1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"t\u00e9","inputResponses":{}}}`, "té", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"t-3"}}`, "t-3", true},
		// Absent: still required, and "" matches no header value.
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, "", true},
		// A taskId that is not a string is no value to mirror.
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":7}}`, "", true},
		// 2025-11-25's tasks/result and tasks/list are not 2026-07-28 methods.
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"t-4"}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"n","taskId":"x"}}`, "n", true},
	} {
		m := mustParse(t, tc.raw)
		got, needed := m.NameValue()
		if got != tc.want || needed != tc.needed {
			t.Errorf("%s: NameValue() = %q, %v; want %q, %v", tc.raw, got, needed, tc.want, tc.needed)
		}
	}
	if m := mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"t-4"}}`); m.TaskID != "t-4" {
		t.Errorf("TaskID = %q", m.TaskID)
	}
}
