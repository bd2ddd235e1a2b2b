//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A child answer over --max-message-size is an error for its request at
// once (issue 21, item 5), with a real TypeScript SDK server:
// server-everything writes result, jsonrpc, then id, so the bridge reads
// the id at the end of the line it cannot hold. A 2026-07-28 call and a
// 2025 session's call, each answered within 5 s; a small echo still works.
func TestServeOversizedAnswerServerEverything(t *testing.T) {
	b := startBridge(t, serveOpts{Flags: []string{"--max-message-size", "65536"}, Child: serverEverythingStdio()})
	big := strings.Repeat("x", 200_000)
	post := func(body string, hdr map[string]string) (last map[string]any, took time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusAccepted {
			return nil, took // a notification
		}
		msgs := []string{string(raw)}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			msgs = nil
			for _, l := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(l, "data: "); ok && d != "" {
					msgs = append(msgs, d)
				}
			}
		}
		if len(msgs) == 0 || json.Unmarshal([]byte(msgs[len(msgs)-1]), &last) != nil {
			t.Fatalf("%d %.300s", resp.StatusCode, raw)
		}
		return last, took
	}
	echo := func(id, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + msg + `"}`
	}
	modern := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
	meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"oversize","version":"1"}}}}`
	isError := func(last map[string]any, id any) bool {
		e, _ := last["error"].(map[string]any)
		return last["id"] == id && e != nil && strings.Contains(str(e["message"]), "--max-message-size")
	}

	// The child may still be starting (node): the first call waits for it.
	if last, _ := post(echo(`"warm"`, "hi")+meta, modern); last["result"] == nil {
		t.Fatalf("a small echo: %v", last)
	}
	last, took := post(echo(`"m1"`, big)+meta, modern)
	if !isError(last, "m1") || took > 5*time.Second {
		t.Errorf("2026-07-28 call with an oversized answer: %.300v after %v, want an error within 5 s", last, took)
	}
	t.Logf("2026-07-28: error after %v", took.Round(time.Millisecond))

	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oversize","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, b.URL, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	last, took = post(echo("5", big)+`}}`, hdr)
	if !isError(last, float64(5)) || took > 5*time.Second {
		t.Errorf("2025 session call with an oversized answer: %.300v after %v, want an error within 5 s", last, took)
	}
	t.Logf("2025 session: error after %v", took.Round(time.Millisecond))
	if last, _ := post(echo("6", "again")+`}}`, hdr); last["result"] == nil {
		t.Errorf("the session's next call: %v", last)
	}
}

func str(v any) string { s, _ := v.(string); return s }
