package telemetry

import (
	"bytes"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// passOn returns an Op that passes on parent and state (its record has no
// span of its own, as with tracing off), holding what ReadMeta read of m.
func passOn(m *wire.Message, parent, state string) *Op {
	o := &Op{r: &spanRecord{parent: parent, state: state}}
	o.Hold(ReadMeta(m))
	return o
}

// relayedBy splices RelayEdits' edits into (a copy of) m as serve's child
// connection does, and returns the bytes the child would read.
func relayedBy(o *Op, m wire.Message) []byte {
	var room [RelayRoom]byte
	e, n := o.RelayEdits(&m, room[:0])
	return wire.Splice(m.Raw, e[:n]...)
}

// TestRelayEdits: the edits serve splices into its copy for the child make
// the message Relay makes — members added to _meta, values replaced, the
// fallbacks that edit m itself, nothing at all — also when the message is
// not the one ReadMeta read (serve strips the envelope for a legacy child).
func TestRelayEdits(t *testing.T) {
	const tp = "00-" + tpTrace + "-" + tpSpan + "-01"
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{ }}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=1","progressToken":3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, // replace one, add one
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`,                                                                        // no _meta
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,                                                                                                    // no params
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":7}}`,                                                                         // not an object
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"TraceParent":"x"}}}`,                                                       // ambiguous
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `","tracestate":"s=1"}}}`,                           // has it already
	} {
		var m wire.Message
		if err := wire.Parse([]byte(raw), &m); err != nil {
			t.Fatal(raw, err)
		}
		for _, state := range []string{"s=1", ""} {
			ref := m
			want := passOn(&m, tp, state).Relay(&ref, ReadMeta(&m)).Raw
			if got := relayedBy(passOn(&m, tp, state), m); !bytes.Equal(got, want) {
				t.Errorf("%s, state %q:\nRelayEdits %s\nRelay      %s", raw, state, got, want)
			}
			// Read from another message than the one relayed: the edits
			// must not trust its spans.
			other := wire.Message{Raw: append([]byte(nil), m.Raw...)}
			wire.Parse(other.Raw, &other)
			if got := relayedBy(passOn(&other, tp, state), m); !bytes.Equal(got, want) {
				t.Errorf("%s, read from a copy:\nRelayEdits %s\nRelay      %s", raw, got, want)
			}
		}
	}
}

// TestRelayedTakesTheHold: after Relayed put the context into the message,
// RelayEdits has nothing more to add (no second traceparent); after End,
// neither does anything.
func TestRelayedTakesTheHold(t *testing.T) {
	const tp = "00-" + tpTrace + "-" + tpSpan + "-01"
	var m wire.Message
	wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{}}}`), &m)
	o := passOn(&m, tp, "")
	c := m
	if got := o.Relayed(&c); !bytes.Contains(got.Raw, []byte(tp)) {
		t.Fatalf("Relayed: %s", got.Raw)
	}
	if _, n := o.RelayEdits(&c, nil); n != 0 {
		t.Errorf("RelayEdits after Relayed: %d edits", n)
	}
	o2 := passOn(&m, tp, "")
	o2.r = nil // ended
	if got := o2.Relayed(&m); got != &m || bytes.Contains(m.Raw, []byte(tp)) {
		t.Errorf("Relayed after End edited %s", m.Raw)
	}
}

// TestRelayEditsAllocateNothing: the usual request (a _meta without trace
// keys) costs serve one copy of the message for the child's id and the
// trace context together; Relay's way was a copy for each.
func TestRelayEditsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	const tp = "00-" + tpTrace + "-" + tpSpan + "-01"
	var m wire.Message
	wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), &m)
	o := passOn(&m, tp, "s=1")
	var n int
	allocs := testing.AllocsPerRun(100, func() {
		var room [RelayRoom]byte
		_, n = o.RelayEdits(&m, room[:0])
	})
	if n != 1 || allocs != 0 {
		t.Errorf("RelayEdits: %d edits, %.0f allocations; want 1 edit, none", n, allocs)
	}
}
