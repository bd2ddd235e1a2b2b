package aggregate

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Run(m, nil, func(map[string]string) {})
}

// waitFor bounds every wait of a test: a broken aggregate fails the test
// instead of hanging it.
const waitFor = 20 * time.Second

// A pipeServer is a downstream that runs a go-sdk server over in-process
// pipes, one per session, and can be killed.
type pipeServer struct {
	srv *mcp.Server

	mu    sync.Mutex
	kills []func()
}

// server returns the Server entry that dials p.
func (p *pipeServer) server(name string) Server {
	return Server{Name: name, Dial: func(context.Context) (io.ReadCloser, io.WriteCloser, func() error, error) {
		inR, inW := io.Pipe()   // the aggregate writes inW
		outR, outW := io.Pipe() // the server writes outW
		done := make(chan error, 1)
		go func() {
			err := p.srv.Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW})
			outW.Close()
			done <- err
		}()
		p.mu.Lock()
		p.kills = append(p.kills, func() {
			inR.CloseWithError(io.ErrClosedPipe)
			outW.Close()
		})
		p.mu.Unlock()
		var once sync.Once
		var err error
		return outR, inW, func() error {
			once.Do(func() {
				inW.Close()
				outR.Close()
				err = <-done
			})
			return err
		}, nil
	}}
}

// kill ends every session of the server as a crash would: its output ends.
func (p *pipeServer) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.kills {
		k()
	}
}

func newPipeServer(name string, opts *mcp.ServerOptions) *pipeServer {
	return &pipeServer{srv: mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts)}
}

// textTool adds a tool that answers "<prefix>:<tool>:<arguments.text>".
func textTool(s *mcp.Server, prefix, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &args)
			return textResult(prefix + ":" + name + ":" + args.Text), nil
		})
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func resultText(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("result has %d contents", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T", r.Content[0])
	}
	return tc.Text
}

// harness runs an Aggregator over downstreams.
type harness struct {
	t   *testing.T
	agg *Aggregator
	log *testmain.SyncBuffer
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	logs := &testmain.SyncBuffer{}
	cfg.Logger = zerolog.New(io.MultiWriter(logs, testmain.TestLog{T: t})).Level(zerolog.DebugLevel)
	agg, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, agg: agg, log: logs}
}

// run starts a session over pipes and returns the client's ends; the
// session ends (and is checked to end) with the test.
func (h *harness) run() (fromAgg io.ReadCloser, toAgg io.WriteCloser) {
	h.t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := h.agg.Run(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	h.t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let its last writes through
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(waitFor):
			h.t.Errorf("Run did not return after its input ended")
		}
		outR.Close()
	})
	return outR, inW
}

// connect connects a go-sdk client (2025-11-25) to a new session.
func (h *harness) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	return h.connectVersion(opts, "2025-11-25")
}

func (h *harness) connectVersion(opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	h.t.Helper()
	r, w := h.run()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, so)
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// rawClient speaks JSON-RPC lines to a session.
type rawClient struct {
	t  *testing.T
	w  io.Writer
	rd *bufio.Reader
}

func (h *harness) raw() *rawClient {
	r, w := h.run()
	return &rawClient{t: h.t, w: w, rd: bufio.NewReader(r)}
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("writing to the aggregate: %v", err)
	}
}

// next reads the next message; a read that does not end is a test
// failure (the session's cleanup closes the pipe after waitFor).
func (c *rawClient) next() map[string]any {
	c.t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := c.rd.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			c.t.Fatalf("reading from the aggregate: %v", r.err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			c.t.Fatalf("not JSON: %q", r.line)
		}
		return m
	case <-time.After(waitFor):
		c.t.Fatalf("no message from the aggregate in %v", waitFor)
		return nil
	}
}

// initialize performs the handshake.
func (c *rawClient) initialize() map[string]any {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func names[T any](items []T, name func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func logHas(h *harness, s string) bool { return strings.Contains(h.log.String(), s) }
