package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
)

// memNet is an in-memory net.Listener: Dial hands one end of a net.Pipe to
// Accept. The gateway serves its own routes on it, so that in-process
// clients (the aggregated endpoint) reach each server through the same
// Handler, limits and translation as a remote client, with no socket.
type memNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemNet() *memNet {
	return &memNet{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (m *memNet) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *memNet) Close() error {
	m.once.Do(func() { close(m.done) })
	return nil
}

func (m *memNet) Addr() net.Addr { return memAddr{} }

// DialContext connects to the listener.
func (m *memNet) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case m.conns <- server:
		return client, nil
	case <-m.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, net.ErrClosed
}

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "gateway" }

// memClient is an HTTP client whose every connection goes to the
// in-memory listener.
func (g *Gateway) memClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:       g.mem.DialContext,
		DisableKeepAlives: false,
		MaxIdleConns:      16,
	}}
}

// DialServer gives an in-process stdio connection to one enabled server:
// what is written to the returned writer reaches /servers/<name>/mcp
// through a connect.Bridge (any era the writer speaks; translated as for a
// remote client), and its answers are read from the returned reader. The
// func ends the connection (the bridge's stdin is closed, then its ctx
// cancelled) and joins it. authorization is the Authorization header the
// requests carry: the credential of the caller the connection acts for
// (caller.go), "" for none.
func (g *Gateway) DialServer(ctx context.Context, name, authorization string) (io.ReadCloser, io.WriteCloser, func() error, error) {
	// The goroutines start under the read lock, with Close not begun:
	// Close sets closed under the write lock before it waits for them.
	g.mu.RLock()
	defer g.mu.RUnlock()
	if _, ok := g.routes[name]; !ok || g.closed() {
		return nil, nil, nil, errorf("%w: %q", ErrUnknownServer, name)
	}
	b, err := connect.New(connect.Config{
		// The host is a loopback name: CheckHost accepts it; the dialer
		// ignores it.
		URL:        "http://localhost" + Path(name),
		HTTPClient: g.memClient(),
		Header:     authHeader(authorization),
		Logger:     g.cfg.Base.Logger.With().Str("server", name).Str("client", "in-process").Logger(),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	runCtx, cancel := context.WithCancel(ctx)
	d := &dialed{b: b, inR: inR, outW: outW, cancel: cancel, stop: g.life.Closing(), done: make(chan struct{})}
	// Under g.mu with Close not begun: Go accepts both.
	g.life.Go(func() { d.run(runCtx) })
	g.life.Go(d.watch)
	var once sync.Once
	closeFn := func() error {
		once.Do(func() {
			inW.Close()
			select {
			case <-d.done:
			case <-d.stop:
			}
			cancel()
			<-d.done
			outR.Close()
		})
		return d.err
	}
	return outR, inW, closeFn, nil
}

// dialed is one DialServer connection: its bridge's run and the watcher
// that cancels it when the Gateway closes.
type dialed struct {
	b      *connect.Bridge
	inR    *io.PipeReader
	outW   *io.PipeWriter
	cancel context.CancelFunc
	stop   <-chan struct{} // the Gateway's Closing
	done   chan struct{}   // closed when run returns; err is set before
	err    error
}

// run is the bridge's Run; its end closes the reader side's stream.
func (d *dialed) run(ctx context.Context) {
	defer close(d.done)
	d.err = d.b.Run(ctx, d.inR, d.outW)
	d.outW.CloseWithError(io.EOF)
	d.inR.Close() // ends the bridge's stdin reader if ctx ended Run
}

// watch cancels the run when the Gateway closes first.
func (d *dialed) watch() {
	select {
	case <-d.done:
	case <-d.stop:
		d.cancel()
	}
}

// authHeader carries a caller's credential.
func authHeader(authorization string) http.Header {
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	return h
}

// ErrNoAggregate is returned by AggregateClient when the configuration
// does not turn the aggregated endpoint on (mcpBridge.aggregate).
var ErrNoAggregate = errors.New("gateway: the aggregated endpoint is off")

// AggregateClient returns the URL of the aggregated endpoint and an HTTP
// client whose every connection goes to the in-memory listener: a
// connect.Bridge given both serves every server of the file to a stdio
// host (mcp-bridge connect --config) with no socket, and the host gets
// connect's handling of either era while the aggregate, its reloads,
// late joins and tool filters stay the one implementation serve --config
// runs. The caller closes the client's idle connections when done.
func (g *Gateway) AggregateClient() (string, *http.Client, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed() {
		return "", nil, errorf("aggregate client after Close")
	}
	if g.agg == nil {
		return "", nil, ErrNoAggregate
	}
	// The host is a loopback name: CheckHost accepts it; the dialer
	// ignores it.
	return "http://localhost" + AggregatePath, g.memClient(), nil
}
