package gateway

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// TestAggregateParsesOncePerDirection counts how often the process parses
// (wire.Parse) the messages of one aggregated tools/call to a stdio
// route. Down, the call is parsed by the aggregate's Handler (HTTP), by
// the Aggregator reading its input (a child of that Handler, over a pipe;
// it parsed it twice before) and by the route's Conn.Send: once on the
// hop from the Aggregator to the route. Up, the answer is parsed by the
// route's child reader, which hands its parse on to the Aggregator
// through Conn.Recv (before, the Aggregator parsed it again), and by the
// aggregate's Handler reading the Aggregator's output: once on the hop.
// The route's child is a process of its own; its parses are not counted.
//
// It does so for each kind of child a route's 2025 session can have: its
// own; the shared legacy child (sessionMode shared), whose messages no
// call claims (list_changed, log lines, its requests) reach the session
// through child.Session.Route; a child that speaks only 2026-07-28
// (childProtocol modern), on which the session is translated and whose
// listen stream's notifications lose their subscription id on the way
// (wire.WithoutSubscriptionID). Before each route session handed its
// child's parse on through Route and the listen stream, the hop parsed
// list_changed again: 5 and 6 parses a change where 3 and 4 are counted
// now. What is counted for list_changed is the route's children's readers
// (the aggregate's Handler keeps a warm spare Aggregator, which has a
// session at the route too) and the aggregate's Handler reading what the
// Aggregator passes on; the hop adds none.
//
// Where the bridge builds a message of its own it parses the new bytes
// once, and that is not the hop's: the translated session's tools/call
// carries the 2026-07-28 envelope the 2025 session's handshake gave it
// (legacysession.Forward), parsed once more down, as on serve's HTTP path.
func TestAggregateParsesOncePerDirection(t *testing.T) {
	for _, tc := range []struct {
		name, servers string
		down, lists   int64 // parses a call down; a list_changed up
	}{
		{"own child", "", 3, 2},
		{"shared legacy child", `, "servers": {"memos": {"sessionMode": "shared", "childProtocol": "legacy"}}`, 3, 3},
		{"2026-07-28 child", `, "servers": {"memos": {"childProtocol": "modern"}}`, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := startGateway(t, `{"mcpServers": {"memos": {"command": "`+bins["memos"]+`", "args": ["-dynamic-tools"]}}, "mcpBridge": {"aggregate": true`+tc.servers+`}}`)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			changed := make(chan struct{}, 64)
			client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + AggregatePath, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: versions[1].version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			call := func(name string) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("CallTool %s: %v", name, err)
				}
			}
			// toggle changes the route's tool list; the client is told.
			toggle := func() {
				call("memos_memo_toggle_beta")
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("no notifications/tools/list_changed")
				}
			}
			call("memos_auth_get_current_user")
			toggle()
			var down, up, lists atomic.Int64
			stop := wire.ObserveParses(func(raw []byte) {
				switch {
				case bytes.Contains(raw, []byte(`"tools/call"`)) && bytes.Contains(raw, []byte("auth_get_current_user")):
					down.Add(1)
				case bytes.Contains(raw, []byte(`"result"`)) && bytes.Contains(raw, []byte("Demo User")):
					up.Add(1)
				case bytes.Contains(raw, []byte(`"notifications/tools/list_changed"`)):
					lists.Add(1)
				}
			})
			const runs = 10
			for range runs {
				call("memos_auth_get_current_user")
				toggle()
			}
			stop()
			t.Logf("parses per aggregated tools/call: %d down, %d up; per list_changed: %d", down.Load()/runs, up.Load()/runs, lists.Load()/runs)
			if down.Load() != tc.down*runs || up.Load() != 2*runs {
				t.Errorf("an aggregated tools/call was parsed %d times down and %d up in %d calls, want %d and 2 a call (once each on the hop between the Aggregator and the route)",
					down.Load(), up.Load(), runs, tc.down)
			}
			if lists.Load() != tc.lists*runs {
				t.Errorf("the route's list_changed was parsed %d times in %d changes, want %d a change (none on the hop)", lists.Load(), runs, tc.lists)
			}
		})
	}
}
