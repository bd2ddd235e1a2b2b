package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// logLines returns the JSON log lines whose message is msg.
func logLines(t *testing.T, logs, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A 2025 session names its client and protocol version once, at INFO, in
// each of the three ways a session is served (its own child, the shared
// legacy child, translated onto a 2026-07-28 child); a 2026-07-28 client's
// first request is logged at DEBUG, once per client.
func TestClientsInLogs(t *testing.T) {
	initialize := func(name, version string) string {
		return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"` + name + `","version":"9.1"}}}`
	}
	for _, tc := range []struct {
		name       string
		cfg        Config
		argv       []string
		translated bool
	}{
		{"own child", Config{Command: testChild()}, nil, false},
		{"shared child", Config{Command: testChild(), SessionMode: SessionShared}, nil, false},
		{"translated", Config{}, []string{bins["memos"], "-legacy=false"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBridge(t, tc.cfg, tc.argv...)
			for _, v := range []string{"2025-06-18", "2025-03-26"} {
				resp, body := rawPost(t, b.URL, initialize("host-"+v, v), nil)
				if resp.StatusCode != 200 {
					t.Fatalf("initialize: %d %s", resp.StatusCode, body)
				}
				hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": v}
				rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, hdr)
			}
			started := logLines(t, b.log.String(), "session started")
			if len(started) != 2 {
				t.Fatalf("%d session started lines, want 2:\n%s", len(started), b.log.String())
			}
			for i, v := range []string{"2025-06-18", "2025-03-26"} {
				l, negotiated := started[i], v
				if tc.cfg.SessionMode == SessionShared {
					negotiated = "2025-06-18" // every session is answered the first one's initialize
				}
				if l["level"] != "info" || l["client"] != "host-"+v || l["client_version"] != "9.1" || l["protocol_version"] != negotiated || l["translated"] != tc.translated {
					t.Errorf("session started: %v", l)
				}
			}
		})
	}

	b := startBridge(t, Config{Command: testChild()})
	for _, who := range []string{"a", "a", "b", "a"} {
		meta := strings.Replace(modernMeta, `"name":"raw-test"`, `"name":"`+who+`"`, 1)
		if resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+meta+`}}`, modernHeaders("ping", "")); resp.StatusCode != 200 {
			t.Fatalf("ping: %d %s", resp.StatusCode, body)
		}
	}
	first := logLines(t, b.log.String(), "first request of a 2026-07-28 client")
	if len(first) != 2 || first[0]["client"] != "a" || first[1]["client"] != "b" || first[0]["level"] != "debug" ||
		first[0]["protocol_version"] != "2026-07-28" || first[0]["principal"] != "anonymous" || first[0]["method"] != "ping" {
		t.Errorf("first-request lines: %v", first)
	}
}
