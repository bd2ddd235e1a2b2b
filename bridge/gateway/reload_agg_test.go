package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}}`

// listen opens a 2026-07-28 subscriptions/listen stream for tool list
// changes on url; the data of each event arrives on the channel.
func listen(t *testing.T, ctx context.Context, url string) <-chan string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: %d %s", resp.StatusCode, b)
	}
	ch := make(chan string, 16)
	go func() { // ends when the body does (the test's ctx, or the stream)
		defer close(ch)
		defer resp.Body.Close()
		buf := make([]byte, 64<<10)
		var pending string
		for {
			n, err := resp.Body.Read(buf)
			pending += string(buf[:n])
			for {
				i := strings.Index(pending, "\n\n")
				if i < 0 {
					break
				}
				for _, line := range strings.Split(pending[:i], "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
						select {
						case ch <- d:
						default:
						}
					}
				}
				pending = pending[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// A reload that adds a server keeps the aggregate's sessions: an open
// 2025 session and an open 2026-07-28 listen stream both go on, both are
// told tools/list_changed, and the new server's tools are listed and
// called in both eras.
func TestAggregateReloadKeepsSessions(t *testing.T) {
	cfgWith := func(extra string) string {
		return fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}%s}, "mcpBridge": {"aggregate": true, "joinTimeout": "10s"}}`, bins["memos"], extra)
	}
	gw := startGateway(t, cfgWith(""))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	changed := make(chan struct{}, 8)
	legacy, err := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	callOK(t, ctx, legacy, "memos_"+probes["memos"])
	modern := connectSDK(t, ctx, gw.URL+AggregatePath, "")
	callOK(t, ctx, modern, "memos_"+probes["memos"])
	events := listen(t, ctx, gw.URL+AggregatePath)
	if ack := <-events; !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event %s, want the acknowledgement", ack)
	}

	if _, err := gw.Reload(parse(t, cfgWith(fmt.Sprintf(`, "memos2": {"command": %q}`, bins["memos"])))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the 2025 session was not told tools/list_changed")
	}
	for {
		ev, ok := <-events
		if !ok {
			t.Fatal("the listen stream ended without tools/list_changed")
		}
		if strings.Contains(ev, "notifications/tools/list_changed") {
			break
		}
	}
	for name, cs := range map[string]*mcp.ClientSession{"2025": legacy, "2026": modern} {
		if names := toolNames(t, ctx, cs); !names["memos2_"+probes["memos"]] || !names["memos_"+probes["memos"]] {
			t.Errorf("%s: tools after the reload lack memos2's or memos': %v", name, names)
		}
		callOK(t, ctx, cs, "memos_"+probes["memos"])
		callOK(t, ctx, cs, "memos2_"+probes["memos"])
	}
	if strings.Contains(gw.log.String(), "shutting down") {
		t.Error("the reload shut something down")
	}
}
