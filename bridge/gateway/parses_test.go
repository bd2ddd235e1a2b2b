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
func TestAggregateParsesOncePerDirection(t *testing.T) {
	gw := startGateway(t, `{"mcpServers": {"memos": {"command": "`+bins["memos"]+`"}}, "mcpBridge": {"aggregate": true}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+AggregatePath, versions[1].version)
	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memos_auth_get_current_user", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("CallTool: %v", err)
		}
	}
	call()
	var down, up atomic.Int64
	stop := wire.ObserveParses(func(raw []byte) {
		switch {
		case bytes.Contains(raw, []byte(`"tools/call"`)) && bytes.Contains(raw, []byte("auth_get_current_user")):
			down.Add(1)
		case bytes.Contains(raw, []byte(`"result"`)) && bytes.Contains(raw, []byte("Demo User")):
			up.Add(1)
		}
	})
	const runs = 20
	for range runs {
		call()
	}
	stop()
	t.Logf("parses per aggregated tools/call: %d down, %d up", down.Load()/runs, up.Load()/runs)
	if down.Load() != 3*runs || up.Load() != 2*runs {
		t.Errorf("an aggregated tools/call was parsed %d times down and %d up in %d calls, want 3 and 2 a call (once each on the hop between the Aggregator and the route)",
			down.Load(), up.Load(), runs)
	}
}
