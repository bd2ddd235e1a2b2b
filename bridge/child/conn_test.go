package child

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// testEnv is an Env with budgets like a Handler's and no child to launch.
func testEnv(perPrincipal bool) *Env {
	warn := &ratelog.Kinds{}
	return &Env{Log: zerolog.Nop(), Warn: warn, Lim: stream.NewLimits(zerolog.Nop(), warn, 1024, 64<<20, 4<<20),
		PerPrincipal: perPrincipal, StartTimeout: time.Second}
}

// sinkChild is a Conn of s whose child swallows everything it is sent.
func sinkChild(t *testing.T, env *Env, s *Shared) *Conn {
	t.Helper()
	c := NewConn(&env.IDs, s, zerolog.Nop())
	host, err := stdiohost.Start(exec.Command("sh", "-c", "cat >/dev/null"), env.HostOptions(c))
	if err != nil {
		t.Fatal(err)
	}
	c.attach(host)
	t.Cleanup(func() { host.Close() })
	return c
}

// A legacy child asking a modern client for input without end: one call
// keeps at most MaxRoundInputs requests open; the rest are refused to the
// child instead of piling up in the bridge.
func TestInputRoundBoundedForLegacyChild(t *testing.T) {
	// Per principal: a child shared by everyone is offered no client
	// capability and may ask nothing at all (TestModernClientsRootsNotShared).
	env := testEnv(true)
	sc := NewShared(env)
	c := sinkChild(t, env, sc)
	cl := &Call{ChildID: 1, Method: "tools/call", Complete: true, Sink: env.Lim.NewSink(1),
		Caps: wire.Capabilities{Sampling: json.RawMessage(`{}`)}, OrigID: []byte("7")}
	c.calls[1] = cl
	for i := range 3 * MaxRoundInputs {
		var m wire.Message
		if err := wire.Parse(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{"n":%d}}`, 1000+i, i), &m); err != nil {
			t.Fatal(err)
		}
		sc.mrtr.childRequest(c, &m)
	}
	n := cl.round.Open()
	sc.mrtr.closeAll()
	if n != MaxRoundInputs {
		t.Errorf("%d input requests held for one call, want %d", n, MaxRoundInputs)
	}
}

// A child's line that is broken past the keys the envelope reader walks
// (a bad literal deep in the result) is dropped whole, not relayed to a
// client whose decoder would fail on it; the call stays pending for the
// child's next, well-formed answer.
func TestChildBrokenJSONDropped(t *testing.T) {
	env := testEnv(false)
	c := sinkChild(t, env, NewShared(env))
	cl := &Call{ChildID: 1, Method: "tools/call", Complete: true, Sink: env.Lim.NewSink(1), OrigID: []byte("7")}
	c.calls[1] = cl
	c.onMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"ok":tru}}}`))
	if msgs, complete := cl.Sink.Drain(); len(msgs) != 0 || complete {
		t.Fatalf("a broken line reached the client: %q", msgs)
	}
	c.onMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"ok":true}}}`))
	if msgs, complete := cl.Sink.Drain(); len(msgs) != 1 || !complete || !strings.Contains(string(msgs[0]), `"id":7`) {
		t.Fatalf("the well-formed answer: %q complete %v", msgs, complete)
	}
}
