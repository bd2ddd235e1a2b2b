package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestModernEnvelopeErrors(t *testing.T) {
	h := startServer(t)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	h.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"1900-01-01"}}}`)

	h.send(`{"jsonrpc":"2.0","id":"a","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	h.expect(`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Missing required _meta field: io.modelcontextprotocol/clientCapabilities"}}`)

	h.send(`{"jsonrpc":"2.0","id":3,"method":"server/discover"}`)
	h.expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Missing required _meta field: io.modelcontextprotocol/protocolVersion"}}`)

	h.send(mreq("4", "foo/bar", ""))
	h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: foo/bar"}}`)

	h.send(mreq("5", "ping", ""))
	h.expect(`{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found: ping"}}`)

	h.send(`{bad json`)
	h.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)

	// Ids are echoed byte-for-byte; \r\n line endings are accepted.
	h.send(mreq(`"x\u0031"`, "server/discover", "") + "\r")
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":"x\u0031","result":{"resultType":"complete"`) {
		t.Fatalf("id not echoed verbatim: %s", got)
	}

	// A request with a null id is a notification: never answered.
	h.send(`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{`+reqMeta+`}}`, mreq("6", "server/discover", ""))
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":6,`) {
		t.Fatalf("notification was answered: %s", got)
	}
}

func TestModernLogging(t *testing.T) {
	h := startServer(t)
	withLevel := func(level string) string {
		return strings.Replace(reqMeta, `"io.modelcontextprotocol/clientCapabilities":{}`,
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"`+level+`"`, 1)
	}
	user := `{"user":{"name":"users/1","username":"demo","role":"ADMIN","displayName":"Demo User"}}`
	h.send(mreqMeta("1", "tools/call", `"name":"auth_get_current_user","arguments":{}`, withLevel("info")))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"memos","data":"tools/call auth_get_current_user"}}`)
	h.expect(modernResult("1", user, user, false))

	// warning filters out info; a failing call logs a warning.
	h.send(mreqMeta("2", "tools/call", `"name":"auth_get_current_user","arguments":{}`, withLevel("warning")))
	h.expect(modernResult("2", user, user, false))
	h.send(mreqMeta("3", "tools/call", `"name":"memo_list_memos","arguments":{"filter":"visibility"}`, withLevel("warning")))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"memos","data":"memo_list_memos failed: Invalid filter expression: expected a comparison after visibility."}}`)
	h.expect(modernResult("3", "Invalid filter expression: expected a comparison after visibility.", "", true))

	h.send(mreqMeta("4", "tools/call", `"name":"auth_get_current_user","arguments":{}`, withLevel("verbose")))
	h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid log level: verbose"}}`)
}

func TestModernElicitation(t *testing.T) {
	h := startServer(t)
	h.send(mcall("1", "memo_delete_memo", `{"name":"memos/shopping-list"}`))
	h.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"Client must declare the elicitation capability","data":{"requiredCapabilities":{"elicitation":{}}}}}`)

	call := func(id, extra string) string {
		return mreqMeta(id, "tools/call", `"name":"memo_delete_memo","arguments":{"name":"memos/shopping-list"}`+extra, reqMetaElicit)
	}
	state := encodeDeleteState("memos/shopping-list")
	h.send(call("2", ""))
	h.expect(`{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"mode":"form","message":"Delete memos/shopping-list?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm deletion"}},"required":["confirm"]}}}},"requestState":"` + state + `",` + serverMeta + `}}`)

	h.send(call("3", `,"requestState":"not-a-state","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`))
	h.expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: requestState is not valid"}}`)

	h.send(call("4", `,"requestState":"`+state+`","inputResponses":{"confirm":{"action":"decline"}}`))
	h.expect(modernResult("4", "kept memos/shopping-list", "", false))

	h.send(call("5", `,"requestState":"`+state+`","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`))
	h.expect(modernResult("5", "deleted memos/shopping-list", "", false))

	h.send(call("6", ""))
	h.expect(modernResult("6", "Memo not found: memos/shopping-list", "", true))
}

func TestModernCancellationStats(t *testing.T) {
	h := startServer(t, "-step-delay", "1h")
	h.send(mcall(`"export-1"`, "memo_export_memos", `{"steps":3}`))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"export-1","reason":"test"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"unknown"}}`)
	h.send(mcall("2", "memo_debug_stats", `{}`))
	stats := fmt.Sprintf(`{"cancelled":1,"inFlight":0,"requests":2,"pid":%d}`, os.Getpid())
	h.expect(modernResult("2", stats, stats, false))
	h.closeInput()
	if code := h.wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if rest := h.rest(); len(rest) != 0 {
		t.Fatalf("cancelled request produced output: %q", rest)
	}
}

func TestModernExportProgress(t *testing.T) {
	h := startServer(t, "-step-delay", "1ms")
	meta := strings.Replace(reqMeta, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{},"progressToken":42`, 1)
	h.send(mreqMeta("7", "tools/call", `"name":"memo_export_memos","arguments":{"steps":3}`, meta))
	for i := 1; i <= 3; i++ {
		h.expect(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":42,"progress":%d,"total":3,"message":"exported %d/3"}}`, i, i))
	}
	h.expect(modernResult("7", "exported 11 memos", "", false))
}

func TestEOFWaitsForInFlight(t *testing.T) {
	h := startServer(t, "-step-delay", "20ms", "-dynamic-tools")
	h.send(mreq(`"sub"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"toolsListChanged":true}}}`)
	h.send(mcall("1", "memo_export_memos", `{"steps":3}`))
	h.closeInput()
	if code := h.wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	rest := h.rest()
	want := []string{
		`{"jsonrpc":"2.0","id":"sub","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"sub","io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}}}`,
		modernResult("1", "exported 11 memos", "", false),
	}
	if strings.Join(rest, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after EOF got\n%s\nwant\n%s", strings.Join(rest, "\n"), strings.Join(want, "\n"))
	}
}

func TestListenAndListChanged(t *testing.T) {
	h := startServer(t, "-dynamic-tools")
	h.send(mreq("1", "subscriptions/listen", `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["memo://x"]}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}`)
	h.send(mreq(`"other"`, "subscriptions/listen", `"notifications":{"promptsListChanged":true}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"other"},"notifications":{}}}`)

	h.send(mcall("2", "memo_toggle_beta", `{}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`)
	h.expect(modernResult("2", "memo_beta_echo enabled", "", false))

	line := h.roundTrip(mreq("3", "tools/list", ""))
	if !strings.Contains(line, `{"name":"memo_toggle_beta",`) || !strings.Contains(line, `{"name":"memo_beta_echo",`) {
		t.Fatalf("beta tools missing: %s", line)
	}
	h.send(mcall("4", "memo_beta_echo", `{"text":"hi <there>"}`))
	h.expect(modernResult("4", "hi <there>", "", false))

	// After cancelling the subscription nothing more is sent for it.
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	h.send(mcall("5", "memo_toggle_beta", `{}`))
	h.expect(modernResult("5", "memo_beta_echo disabled", "", false))
	h.send(mcall("6", "memo_beta_echo", `{"text":"x"}`))
	h.expect(`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Unknown tool: memo_beta_echo"}}`)
	h.send(mcall("7", "memo_debug_stats", `{}`))
	stats := fmt.Sprintf(`{"cancelled":1,"inFlight":1,"requests":8,"pid":%d}`, os.Getpid())
	h.expect(modernResult("7", stats, stats, false))
}

func TestListenWithoutDynamicTools(t *testing.T) {
	h := startServer(t)
	h.send(mreq("1", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{}}}`)
	h.send(mcall("2", "memo_toggle_beta", `{}`))
	h.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: memo_toggle_beta"}}`)
}

func TestConcurrentRequests(t *testing.T) {
	h := startServer(t, "-step-delay", "1h")
	// A slow call does not block a fast one.
	h.send(mcall("1", "memo_export_memos", `{"steps":1}`))
	h.send(mreq("2", "server/discover", ""))
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":2,`) {
		t.Fatalf("got %s", got)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
}

func TestPagination(t *testing.T) {
	h := startServer(t)
	var all []string
	token := ""
	for page := 0; ; page++ {
		args := `{"pageSize":4}`
		if token != "" {
			args = fmt.Sprintf(`{"pageSize":4,"pageToken":%q}`, token)
		}
		names, next := memoNames(t, h.roundTrip(mcall(fmt.Sprint(page+1), "memo_list_memos", args)))
		all = append(all, names...)
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not terminate")
		}
		token = next
	}
	want := "memos/private-draft memos/example-public-memo memos/urgent-deploy memos/roadmap-q3 memos/code-snippet memos/team-standup memos/shopping-list memos/urgent-invoice memos/roadmap-retro"
	if got := strings.Join(all, " "); got != want {
		t.Fatalf("paged listing\n got %s\nwant %s", got, want)
	}
	h.send(mcall("9", "memo_list_memos", `{"pageToken":"!!"}`))
	h.expect(modernResult("9", `Invalid page token "!!".`, "", true))
}

func TestLargeLines(t *testing.T) {
	h := startServer(t, "-debug")
	big := strings.Repeat("x", 2<<20)
	h.send(mreqMeta("1", "server/discover", "", strings.Replace(reqMeta, `"_meta":{`, `"_meta":{"pad":"`+big+`",`, 1)))
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"`) {
		t.Fatalf("got %.200s", got)
	}
	// Stream a line just over 32 MiB without building it in memory.
	chunk := strings.Repeat("y", 1<<20)
	h.sendRaw(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"`)
	for range 32 {
		h.sendRaw(chunk)
	}
	h.send(`"}}`)
	h.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: message exceeds 32 MiB"}}`)
	h.send(mreq("3", "server/discover", ""))
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":3,"result":`) {
		t.Fatalf("got %.200s", got)
	}
	h.closeInput()
	h.wait()
	if !strings.Contains(h.stderr.String(), `<- {"jsonrpc":"2.0","id":3`) {
		t.Errorf("-debug did not log to stderr")
	}
}
