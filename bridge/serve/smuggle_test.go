package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// smuggled are request bodies that carry a routed key a second time,
// escaped or in another case, aimed at the child's request number k (the
// bridge numbers its requests to a child 1, 2, 3, ...). A byte-for-byte
// reader sees one message; the memos child (encoding/json: escapes decoded,
// keys matched case-insensitively, the last duplicate wins) sees another —
// an answer, a progress stream or a cancellation for request k, which is
// some other client's call. meta is the _meta members a request carries
// (the 2026-07-28 envelope, or nothing); hdr are the headers the body
// claims to match.
func smuggled(k int, meta string) (bodies []string, hdrs []map[string]string) {
	call := func(idPart, name, extraMeta string) string {
		m := strings.TrimPrefix(meta+","+extraMeta, ",")
		m = strings.TrimSuffix(m, ",")
		return fmt.Sprintf(`{"jsonrpc":"2.0",%s,"method":"tools/call","params":{"name":%q,"arguments":{"steps":2},"_meta":{%s}}}`, idPart, name, m)
	}
	add := func(body, method, name string) {
		bodies = append(bodies, body)
		hdrs = append(hdrs, modernHeaders(method, name))
	}
	const list = "memo_list_memos"
	add(call(`"\u0069d":`+fmt.Sprint(k), list, ""), "tools/call", list)
	add(call(`"id":"atk-a","ID":`+fmt.Sprint(k), list, ""), "tools/call", list)
	add(call(`"id":"atk-b","id":`+fmt.Sprint(k), list, ""), "tools/call", list)
	add(call(`"id":"atk-c","\u0049\u0044":`+fmt.Sprint(k), list, ""), "tools/call", list)
	add(call(`"id":"atk-d"`, "memo_export_memos", `"progressToken":"q","progress\u0054oken":`+fmt.Sprint(k)), "tools/call", "memo_export_memos")
	add(call(`"id":"atk-e"`, "memo_export_memos", `"progressToken":"q","progresstoken":`+fmt.Sprint(k)), "tools/call", "memo_export_memos")
	add(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"atk-a","request\u0049d":%d,"reason":"x"}}`, k), "notifications/cancelled", "")
	add(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestID":%d,"reason":"x"}}`, k), "notifications/cancelled", "")
	// Duplicate method and name: the headers name the first, the child
	// runs the last.
	add(strings.Replace(call(`"id":"atk-f"`, list, ""), `"method":"tools/call"`, `"method":"tools/list","method":"tools/call"`, 1), "tools/list", "")
	add(strings.Replace(call(`"id":"atk-g"`, list, ""), `"name":"memo_list_memos"`, `"name":"memo_list_memos","name":"memo_export_memos"`, 1), "tools/call", list)
	add(strings.Replace(call(`"id":"atk-h"`, list, ""), `"name":"memo_list_memos"`, `"name":"memo_list_memos","n\u0061me":"memo_export_memos"`, 1), "tools/call", list)
	return bodies, hdrs
}

// post is rawPost for goroutines: it reports instead of failing the test.
func post(ctx context.Context, url, body string, hdr map[string]string) (int, []byte, error) {
	req := mcpRequest(ctx, http.MethodPost, url, body, hdr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// victim is one client's long call: its own id 1, its own progress token
// "p", a number of steps no other victim uses.
type victim struct {
	steps int
	hdr   map[string]string
	body  string
}

// check fails the test unless msgs are exactly the victim's own: steps
// progress events for "p" out of steps, and one result for id 1 from the
// tool it called.
func (v victim) check(t *testing.T, name string, msgs []map[string]any) {
	t.Helper()
	progress, results := 0, 0
	for _, m := range msgs {
		switch {
		case m["method"] == "notifications/progress":
			p, _ := m["params"].(map[string]any)
			if p["progressToken"] != "p" || p["total"] != float64(v.steps) {
				t.Errorf("%s received someone else's progress: %v", name, m)
			}
			progress++
		case m["method"] != nil:
			t.Errorf("%s received an unexpected message: %v", name, m)
		default:
			results++
			b, _ := json.Marshal(m)
			if m["id"] != float64(1) || m["result"] == nil || !strings.Contains(string(b), "exported ") {
				t.Errorf("%s received a foreign or failed answer: %s", name, b)
			}
		}
	}
	if progress != v.steps || results != 1 {
		t.Errorf("%s: %d progress events and %d answers, want its own %d and 1", name, progress, results, v.steps)
	}
}

// Issue 8, smuggled routing keys: while victims' calls are in flight,
// attackers send requests whose routed keys are duplicated, escaped or
// case variants, aimed at every request number the child could have
// given a victim's call. Every such request is a 400 (-32600; never a 202
// as if it were a notification), and no victim sees a foreign result,
// progress event or cancellation.
func TestSmuggledKeysNeverCross(t *testing.T) {
	for _, mode := range []SessionMode{"", SessionShared} {
		name := "modern"
		if mode == SessionShared {
			name = "legacy-shared"
		}
		t.Run(name, func(t *testing.T) {
			b := startBridge(t, Config{SessionMode: mode}, bins["memos"], "-step-delay", "50ms")
			// session opens a legacy session and returns its headers; in
			// modern mode every request stands alone.
			session := func() map[string]string {
				if mode != SessionShared {
					return nil
				}
				resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
				sid := resp.Header.Get("Mcp-Session-Id")
				if resp.StatusCode != 200 || sid == "" {
					t.Fatalf("initialize: %d %s", resp.StatusCode, body)
				}
				h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
				if resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); resp.StatusCode != 202 {
					t.Fatalf("initialized: %d %s", resp.StatusCode, body)
				}
				return h
			}
			meta := strings.TrimSuffix(strings.TrimPrefix(modernMeta, `"_meta":{`), "}")
			if mode == SessionShared {
				meta = ""
			}
			withHeaders := func(base, extra map[string]string) map[string]string {
				out := map[string]string{}
				for k, v := range extra {
					if mode != SessionShared {
						out[k] = v
					}
				}
				for k, v := range base {
					out[k] = v
				}
				return out
			}

			const victims = 4
			vs := make([]victim, victims)
			for i := range vs {
				steps := 40 + i
				m := strings.TrimSuffix(`"progressToken":"p",`+meta, ",")
				vs[i] = victim{
					steps: steps,
					hdr:   withHeaders(session(), modernHeaders("tools/call", "memo_export_memos")),
					body:  fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":%d},"_meta":{%s}}}`, steps, m),
				}
			}
			var wg sync.WaitGroup
			for i, v := range vs {
				wg.Go(func() {
					resp, raw := rawPost(t, b.URL, v.body, v.hdr)
					if resp.StatusCode != 200 {
						t.Errorf("victim %d: %d %s", i, resp.StatusCode, raw)
						return
					}
					v.check(t, fmt.Sprintf("victim %d", i), messages(t, resp, raw))
				})
			}
			waitFor(t, "the victims' calls to be in flight", func() bool { return b.InFlight() >= victims })

			// Every smuggled request goes at once, each on its own: without
			// the check some are never answered (the child's answer went to
			// a victim), and must not hold the others back. With it, each
			// is refused at once; the deadline only ends the test's wait
			// for those that would never be answered.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			type outcome struct {
				body   string
				status int
				raw    []byte
				err    error
			}
			var outcomes []chan outcome
			for k := 1; k <= 32; k++ {
				base := session()
				bodies, hdrs := smuggled(k, meta)
				for j, body := range bodies {
					ch := make(chan outcome, 1)
					outcomes = append(outcomes, ch)
					go func() {
						status, raw, err := post(ctx, b.URL, body, withHeaders(base, hdrs[j]))
						ch <- outcome{body, status, raw, err}
					}()
				}
			}
			wg.Wait()
			for _, ch := range outcomes {
				o := <-ch
				var e struct{ Error struct{ Code int } }
				json.Unmarshal(o.raw, &e)
				if o.err != nil || o.status != 400 || (e.Error.Code != -32600 && e.Error.Code != -32700) {
					t.Errorf("smuggled %s: %d %s (%v), want 400 with -32600", o.body, o.status, o.raw, o.err)
				}
			}
		})
	}
}

// A header/body mismatch hidden in a second spelling of an argument: the
// Mcp-Param-Region header matches "region", the Go server reads "Region"
// (encoding/json matches keys case-insensitively, the last one wins).
func TestSmuggledArgumentKey(t *testing.T) {
	b := startBridge(t, Config{}, bins["everything"])
	h := modernHeaders("tools/call", "test_x_mcp_header")
	h["Mcp-Param-Region"] = "us-west1"
	for _, args := range []string{`{"region":"us-west1","Region":"eu-north1"}`, `{"region":"us-west1","REGION":"eu-north1"}`} {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_x_mcp_header","arguments":`+args+`,`+modernMeta+`}}`, h)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "-32600") {
			t.Errorf("%s: %d %s, want 400 -32600", args, resp.StatusCode, body)
		}
	}
	// The bridge learns the bindings from tools/list; a plain call passes.
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_x_mcp_header","arguments":{"region":"us-west1"},`+modernMeta+`}}`, h)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "region=us-west1") {
		t.Errorf("plain call: %d %s", resp.StatusCode, body)
	}
}
