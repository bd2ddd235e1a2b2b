package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func initResult(id, version, tools string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"logging":{},"tools":%s},"serverInfo":{"name":"memos-example-adapter","version":"1.0.0"},"instructions":"Provides tools for querying Memos."}}`, id, version, tools)
}

func TestLegacyInitializeVersions(t *testing.T) {
	for _, tc := range []struct{ asked, got string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2025-11-25"},
		{"2026-07-28", "2025-11-25"},
	} {
		t.Run(tc.asked, func(t *testing.T) {
			h := startServer(t)
			h.send(initialize("1", tc.asked, `{}`))
			h.expect(initResult("1", tc.got, `{}`))
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			h.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
			line := h.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"memo_list_memos",`) ||
				strings.Contains(line, "resultType") || strings.Contains(line, "ttlMs") || strings.Contains(line, "serverInfo") {
				t.Fatalf("bad legacy tools/list: %.200s", line)
			}
			h.send(initialize("4", tc.asked, `{}`))
			h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"already initialized"}}`)
			// A modern request after a legacy initialize is answered as modern.
			h.send(mreq("5", "server/discover", ""))
			if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete"`) {
				t.Fatalf("modern request after initialize: %s", got)
			}
		})
	}
}

func TestLegacyDynamicTools(t *testing.T) {
	h := startServer(t, "-dynamic-tools")
	h.send(initialize("1", "2025-06-18", `{}`))
	h.expect(initResult("1", "2025-06-18", `{"listChanged":true}`))
	h.send(lcall("2", "memo_toggle_beta", `{}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	h.expect(legacyResult("2", "memo_beta_echo enabled", "", false))
}

func TestLegacyNotInitialized(t *testing.T) {
	h := startServer(t)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	h.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	h.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"not initialized"}}`)
	h.send(initialize("3", "2025-11-25", `{}`))
	h.expect(initResult("3", "2025-11-25", `{}`))
	h.send(`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`)
	h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: resources/list"}}`)
}

func TestLegacySetLevel(t *testing.T) {
	h := startServer(t)
	h.roundTrip(initialize("1", "2025-11-25", `{}`))
	user := `{"user":{"name":"users/1","username":"demo","role":"ADMIN","displayName":"Demo User"}}`
	h.send(lcall("2", "auth_get_current_user", `{}`))
	h.expect(legacyResult("2", user, user, false)) // no level set: no log messages
	h.send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`)
	h.expect(`{"jsonrpc":"2.0","id":3,"result":{}}`)
	h.send(lcall("4", "auth_get_current_user", `{}`))
	h.expect(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"memos","data":"tools/call auth_get_current_user"}}`)
	h.expect(legacyResult("4", user, user, false))
	h.send(`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"loud"}}`)
	h.expect(`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid log level: loud"}}`)
}

func TestLegacyBatches(t *testing.T) {
	h := startServer(t)
	h.roundTrip(initialize("1", "2025-03-26", `{}`))
	user := `{"user":{"name":"users/1","username":"demo","role":"ADMIN","displayName":"Demo User"}}`
	h.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` +
		lcall("3", "auth_get_current_user", `{}`) + `,{"jsonrpc":"2.0","id":4,"method":"nope"},{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}]`)
	h.expect(`[{"jsonrpc":"2.0","id":2,"result":{}},` + legacyResult("3", user, user, false) +
		`,{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: nope"}},{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: initialize must not be part of a batch"}}]`)
	// A batch of notifications only gets no answer.
	h.send(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, `{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	h.expect(`{"jsonrpc":"2.0","id":6,"result":{}}`)
	h.send(`[]`)
	h.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)
}

func TestBatchesRejectedOtherwise(t *testing.T) {
	const rejected = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are only supported with protocol version 2025-03-26"}}`
	for _, v := range []string{"", "2025-06-18", "2025-11-25"} {
		t.Run("v"+v, func(t *testing.T) {
			h := startServer(t)
			if v != "" {
				h.roundTrip(initialize("1", v, `{}`))
			}
			h.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			h.expect(rejected)
		})
	}
}

func TestLegacyElicitation(t *testing.T) {
	schema := `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm deletion"}},"required":["confirm"]}`
	t.Run("2025-11-25 accept", func(t *testing.T) {
		h := startServer(t)
		h.roundTrip(initialize("1", "2025-11-25", `{"elicitation":{}}`))
		h.send(lcall("2", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.expect(`{"jsonrpc":"2.0","id":"memos-elicit-1","method":"elicitation/create","params":{"mode":"form","message":"Delete memos/roadmap-retro?","requestedSchema":` + schema + `}}`)
		h.send(`{"jsonrpc":"2.0","id":"memos-elicit-1","result":{"action":"accept","content":{"confirm":true}}}`)
		h.expect(legacyResult("2", "deleted memos/roadmap-retro", "", false))
		h.send(lcall("3", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.expect(legacyResult("3", "Memo not found: memos/roadmap-retro", "", true))
	})
	t.Run("2025-06-18 decline", func(t *testing.T) {
		h := startServer(t)
		h.roundTrip(initialize("1", "2025-06-18", `{"elicitation":{}}`))
		h.send(lcall("2", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.expect(`{"jsonrpc":"2.0","id":"memos-elicit-1","method":"elicitation/create","params":{"message":"Delete memos/roadmap-retro?","requestedSchema":` + schema + `}}`)
		h.send(`{"jsonrpc":"2.0","id":"memos-elicit-1","result":{"action":"decline"}}`)
		h.expect(legacyResult("2", "kept memos/roadmap-retro", "", false))
		h.send(lcall("3", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.expect(`{"jsonrpc":"2.0","id":"memos-elicit-2","method":"elicitation/create","params":{"message":"Delete memos/roadmap-retro?","requestedSchema":` + schema + `}}`)
		h.send(`{"jsonrpc":"2.0","id":"memos-elicit-2","result":{"action":"accept","content":{"confirm":false}}}`)
		h.expect(legacyResult("3", "kept memos/roadmap-retro", "", false))
	})
	t.Run("no capability", func(t *testing.T) {
		h := startServer(t)
		h.roundTrip(initialize("1", "2025-11-25", `{}`))
		h.send(lcall("2", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.expect(legacyResult("2", "elicitation not supported by client", "", true))
	})
	t.Run("stdin closes while waiting", func(t *testing.T) {
		h := startServer(t)
		h.roundTrip(initialize("1", "2025-11-25", `{"elicitation":{}}`))
		h.send(lcall("2", "memo_delete_memo", `{"name":"memos/roadmap-retro"}`))
		h.next() // the elicitation request
		h.closeInput()
		if code := h.wait(); code != 0 {
			t.Fatalf("exit %d", code)
		}
		rest := h.rest()
		if len(rest) != 1 || rest[0] != legacyResult("2", "Elicitation aborted: the client closed its input", "", true) {
			t.Fatalf("got %q", rest)
		}
	})
}

func TestLegacyCancellation(t *testing.T) {
	h := startServer(t, "-step-delay", "1h")
	h.roundTrip(initialize("1", "2025-11-25", `{}`))
	h.send(lcall("2", "memo_export_memos", `{}`))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.send(lcall("3", "memo_debug_stats", `{}`))
	stats := fmt.Sprintf(`{"cancelled":1,"inFlight":0,"requests":3,"pid":%d}`, os.Getpid())
	h.expect(legacyResult("3", stats, stats, false))
}

func TestModernOff(t *testing.T) {
	h := startServer(t, "-modern=false")
	h.send(mreq("1", "server/discover", ""))
	h.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: server/discover"}}`)
	h.send(mreq("2", "tools/list", ""))
	h.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"not initialized"}}`)
	h.send(initialize("3", "2025-11-25", `{}`))
	h.expect(initResult("3", "2025-11-25", `{}`))
	h.send(mreq("4", "tools/list", ""))
	h.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: tools/list"}}`)
}

func TestExitBeforeInit(t *testing.T) {
	t.Run("probe", func(t *testing.T) {
		h := startServer(t, "-modern=false", "-exit-before-init")
		h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		h.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		h.send(mreq("2", "server/discover", ""))
		if code := h.wait(); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if rest := h.rest(); len(rest) != 0 {
			t.Fatalf("unexpected output %q", rest)
		}
	})
	t.Run("after init", func(t *testing.T) {
		h := startServer(t, "-modern=false", "-exit-before-init")
		h.send(initialize("1", "2025-03-26", `{}`))
		h.expect(initResult("1", "2025-03-26", `{}`))
		h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":2,"result":{"tools":[`) {
			t.Fatalf("got %.100s", got)
		}
		h.closeInput()
		if code := h.wait(); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	})
}

func TestLegacyOff(t *testing.T) {
	h := startServer(t, "-legacy=false")
	h.send(initialize("1", "2025-06-18", `{}`))
	h.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2025-06-18"}}}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	h.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: ping"}}`)
	h.send(mreq("3", "server/discover", ""))
	if got := h.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete"`) {
		t.Fatalf("got %s", got)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-dataset", "huge"}, {"-modern=false", "-legacy=false"}, {"extra"}, {"-nope"}} {
		var stderr lockedBuffer
		if code := run(t.Context(), strings.NewReader(""), &lockedBuffer{}, &stderr, args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
