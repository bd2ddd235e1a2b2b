package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// discoverLegacyRun is an in-process stdio server of the 2025 era that
// also implements server/discover, listing only 2025 versions — what a
// stateful Go SDK server does. It answers initialize and tools/call.
func discoverLegacyRun(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var result string
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"discover-legacy","version":"1"}}`
		case "server/discover":
			result = `{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{"tools":{}},"serverInfo":{"name":"discover-legacy","version":"1"}}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"called"}]}`
		default:
			result = `{}`
		}
		if _, err := io.WriteString(stdout, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+"}\n"); err != nil {
			return err
		}
	}
	return in.Err()
}

// A child whose server/discover lists only 2025 versions is legacy only:
// the list decides, not that the method answered (translate.Decide, the
// rule connect has always used; serve's probe took any DiscoverResult as
// modern and passed 2026-07-28 clients through to a child that cannot
// serve them). So the bridge answers a modern client's server/discover
// itself, with 2026-07-28.
func TestProbeDiscoverListingOnly2025(t *testing.T) {
	b := startBridge(t, Config{Run: discoverLegacyRun}, "unused")
	out := b.log.String()
	if !strings.Contains(out, `"child_protocol":"legacy only"`) {
		t.Errorf("era verdict for a child whose server/discover lists only 2025 versions, want legacy only:\n%s", out)
	}
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", ""))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"supportedVersions":["2026-07-28"]`) {
		t.Errorf("server/discover through the bridge: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{},`+modernMeta+`}}`, modernHeaders("tools/call", "x"))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"called"`) || !strings.Contains(string(body), `"resultType":"complete"`) {
		t.Errorf("tools/call through the bridge: %d %s", resp.StatusCode, body)
	}
}
