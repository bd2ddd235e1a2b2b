package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// A legacy child goes on reporting progress under the token of the request
// it got, while a modern client's retry carries a token of its own, or
// none: the child's progress after an input round goes out under the
// retry's token, and not at all when the retry asked for none ("Progress
// notifications MUST only reference tokens that were provided in an
// active request", basic/patterns/progress) — the rule connect's face
// always had.
func TestRetryProgressToken(t *testing.T) {
	b := startBridge(t, Config{Command: testChild(), ChildPer: ChildPerPrincipal})
	meta := func(token string) string {
		caps := `"io.modelcontextprotocol/clientCapabilities":{"roots":{}}`
		if token != "" {
			caps += `,"progressToken":"` + token + `"`
		}
		return strings.Replace(modernMeta, `"io.modelcontextprotocol/clientCapabilities":{}`, caps, 1)
	}
	hdr := modernHeaders("tools/call", "ask-progress")
	for _, retryToken := range []string{"second", ""} {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask-progress","arguments":{},`+meta("first")+`}}`, hdr)
		msgs := messages(t, resp, body)
		res, _ := msgs[len(msgs)-1]["result"].(map[string]any)
		if res["resultType"] != "input_required" {
			t.Fatalf("no input round: %s", body)
		}
		state, _ := json.Marshal(res["requestState"])
		resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-progress","arguments":{},`+
			`"inputResponses":{"input-1":{"roots":[]}},"requestState":`+string(state)+`,`+meta(retryToken)+`}}`, hdr)
		msgs = messages(t, resp, body)
		var tokens []any
		for _, m := range msgs[:len(msgs)-1] {
			if m["method"] == "notifications/progress" {
				p, _ := m["params"].(map[string]any)
				tokens = append(tokens, p["progressToken"])
			}
		}
		if last := msgs[len(msgs)-1]; last["id"] != float64(2) || last["result"] == nil {
			t.Fatalf("retry answered with %v", last)
		}
		switch {
		case retryToken != "" && (len(tokens) != 1 || tokens[0] != retryToken):
			t.Errorf("retry with token %q: progress under %v, want it once under the retry's", retryToken, tokens)
		case retryToken == "" && len(tokens) != 0:
			t.Errorf("retry without a token: progress under %v, want none", tokens)
		}
	}
}
