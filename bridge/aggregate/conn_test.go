package aggregate

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// lineConn is a Conn over a Dial's streams, as a server in the same
// process gives one: first over-long is handed over before anything of
// the server's own.
type lineConn struct {
	out       *bufio.Reader
	in        io.WriteCloser
	closeWait func() error
	first     []byte
	once      sync.Once
}

func (c *lineConn) Send(msg []byte) error {
	_, err := c.in.Write(append(bytes.Clone(msg), '\n'))
	return err
}

func (c *lineConn) Recv(m *wire.Message) error {
	for {
		msg := c.first
		c.first = nil
		if msg == nil {
			line, err := c.out.ReadBytes('\n')
			if err != nil {
				return err
			}
			msg = bytes.TrimSuffix(line, []byte("\n"))
		}
		if wire.Parse(msg, m) == nil {
			return nil
		}
	}
}

func (c *lineConn) Close() error {
	c.once.Do(func() { c.closeWait() })
	return nil
}

// A server reached in-process (Server.Open) is aggregated as one reached
// through streams: its tools are listed and called; a message over
// MaxMessageSize is skipped with a warning, as an over-long line is.
func TestServerOpen(t *testing.T) {
	p := newPipeServer("alpha", nil)
	textTool(p.srv, "alpha", "echo")
	srv := p.server("alpha")
	h := newHarness(t, Config{MaxMessageSize: 4096, Servers: []Server{{Name: "alpha", Open: func(ctx context.Context) (Conn, error) {
		out, in, closeWait, err := srv.Dial(ctx)
		if err != nil {
			return nil, err
		}
		big := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 5000) + `"}}`)
		return &lineConn{out: bufio.NewReaderSize(out, 1<<16), in: in, closeWait: closeWait, first: big}, nil
	}}}})
	cs := h.connect(nil)
	ctx := ctxT(t)
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, r); got != "alpha:echo:hi" {
		t.Errorf("alpha_echo = %q", got)
	}
	if !logHas(h, "over-long message") {
		t.Error("the over-long message was not skipped with a warning")
	}
}
