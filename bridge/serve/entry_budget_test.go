package serve

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An in-process client that stops reading is cut by the budget as an HTTP
// client that stops reading is: its stream holds at most a stream's bound
// (--max-message-size) while the child floods it, the delivery waiting on
// the reader is aborted (stream.PumpDirect), and Close still returns.
func TestOpenReaderBehindIsCut(t *testing.T) {
	const bound = 16 << 10
	b := startBridge(t, Config{MaxMessageSize: bound}, bins["memos"], "-step-delay", "2ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := b.Open(ctx, Caller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	entryAsk(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if err := c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	// Progress for every step, and no Recv from now on.
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":1000},"_meta":{"progressToken":7}}}`)); err != nil {
		t.Fatal(err)
	}
	var most int64
	waitFor(t, "the stream of the reader that stopped to be cut", func() bool {
		most = max(most, b.lim.Buffered())
		return strings.Contains(b.log.String(), "stream_overrun") || strings.Contains(b.log.String(), "stream cut")
	})
	if most > bound {
		t.Errorf("the stream held %d bytes, over its bound of %d", most, bound)
	}
	waitFor(t, "the cut stream to leave the budget", func() bool { return b.lim.Buffered() == 0 })
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second): // a wide margin: nothing waits on the reader
		t.Fatal("Close did not return")
	}
}
