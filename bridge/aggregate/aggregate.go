package aggregate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Errors of New.
var (
	ErrNoName        = errors.New("aggregate: a server has no name")
	ErrDuplicateName = errors.New("aggregate: two servers have the same name")
	ErrNoDial        = errors.New("aggregate: a server has no Dial")
)

// A Server is one downstream MCP server.
type Server struct {
	// Name prefixes the server's tools and prompts (<Name><Separator><tool>),
	// is the authority of its ui:// resources (see apps.go) and names it in
	// logs.
	Name string
	// NoPrefix exposes the server's tools and prompts under their own
	// names, for MCP App HTML that calls tools by the names its server
	// gave them. A bare name is exposed only while no other server's
	// entry claims it: on a collision the server's entry falls back to
	// its prefixed name (see merge).
	NoPrefix bool
	// Dial starts the server, or connects to it, for one upstream session.
	// It returns the server's stdout (what the Aggregator reads), its stdin
	// (what it writes) and a function that closes both and waits for the
	// server to end. ctx ends with the session.
	Dial func(ctx context.Context) (stdout io.ReadCloser, stdin io.WriteCloser, closeWait func() error, err error)
	// Open, if set, is used instead of Dial: it connects to a server run
	// in the same process message by message (bridge/gateway's routes,
	// serve.Handler.Open), with no stream to frame or pipe to copy
	// through. ctx ends with the session.
	Open func(ctx context.Context) (Conn, error)
}

// A Conn is a server reached in-process (Server.Open). Send and Recv carry
// one JSON-RPC message each, without a newline; Send does not wait for an
// answer, and Recv gives each message the server sent, in order, then
// io.EOF once it has ended. Recv gives a message parsed (wire.Parse's
// reading; m.Raw is its bytes, the Aggregator's from then on), and
// checked whole (wire.Valid) by the Conn: the Aggregator does not parse
// it again. Close ends the connection, makes Recv return, and waits for
// the Conn's own work.
type Conn interface {
	Send(msg []byte) error
	Recv(m *wire.Message) error
	Close() error
}

// Config configures an Aggregator. The zero value of every field but
// Servers is usable.
type Config struct {
	// Servers are the downstreams, in the order that breaks ties: when two
	// exposed names collide, the server listed first keeps the name.
	Servers []Server
	// Separator joins a server name and a tool or prompt name; "" means "_".
	Separator string
	// Logger receives the Aggregator's logs; the zero value logs nothing.
	Logger zerolog.Logger

	// AllowTool, when non-nil, hides the tools it returns false for: they
	// are left out of tools/list and cannot be called.
	AllowTool func(server, tool string) bool

	// StartTimeout bounds the initialize of one downstream; 0 means 30 s.
	// A downstream not ready by then is left out of the session. (Dial gets
	// the session's context: it should return once the server is started,
	// not wait for it to be ready.)
	StartTimeout time.Duration
	// JoinTimeout bounds how long the client's initialize waits for the
	// servers; 0 means 5 s. initialize is answered once every server has
	// initialized or failed, or JoinTimeout after it began, with the
	// servers ready then. A server still starting goes on (up to
	// StartTimeout) and joins the session when it is ready: it becomes
	// routable and the client gets list_changed for the kinds it offers.
	// Capabilities only a late server has (logging, completions,
	// resources.subscribe) were not in the answer: its log messages are
	// dropped and requests of those kinds are not routed to it unless a
	// server ready in time offered them too.
	JoinTimeout time.Duration
	// ListTimeout bounds one downstream's part of a list (all its pages);
	// 0 means JoinTimeout, so that every step of the slowest server costs
	// the client at most JoinTimeout. A downstream that takes longer is
	// left out of that list (OnAbsent) and asked again at the next one.
	ListTimeout time.Duration
	// OnAbsent, when non-nil, is told each time a server is left out of an
	// answer: step is "initialize" (it missed JoinTimeout; it joins later)
	// or the list method it did not answer in time or answered with an
	// error. A metric, typically.
	OnAbsent func(server, step string)
	// MaxMessageSize bounds a line read from either side; 0 means
	// lineio.DefaultMaxLineSize.
	MaxMessageSize int
	// MaxInflight bounds the upstream requests handled at once; 0 means
	// 256. A request over the bound is answered with an error at once.
	MaxInflight int
}

const (
	defaultTimeout     = 30 * time.Second
	defaultJoinTimeout = 5 * time.Second
	defaultMaxInflight = 256
	// maxRelayed bounds one downstream's outstanding requests to the
	// client (sampling, elicitation, roots).
	maxRelayed = 64
	// maxPages bounds the pages of one list a downstream may return: a
	// server that hands out cursors forever cannot hold a list open.
	maxPages = 1000
	// maxItems bounds the entries of one downstream's list.
	maxItems = 100000
	// maxQueued bounds the messages queued for one server's input by the
	// stream readers (answers to its pings and requests, notifications).
	maxQueued = 256
	// maxHeld and maxHeldBytes bound what a server sends before it is
	// let talk to the client (see downstream.open).
	maxHeld      = 64
	maxHeldBytes = 4 << 20
	// maxSubscriptions bounds the resource subscriptions of a session.
	maxSubscriptions = 10000
)

// An Aggregator serves upstream sessions over its downstream servers. It
// holds only configuration: each Run dials the downstreams afresh, so one
// Aggregator may serve many sessions, one after another or at once.
type Aggregator struct {
	cfg Config // Servers: guarded by mu; the rest never changes

	mu       sync.Mutex
	sessions map[*session]struct{} // running, for SetServers
}

// New checks cfg and returns an Aggregator.
func New(cfg Config) (*Aggregator, error) {
	if err := checkServers(cfg.Servers); err != nil {
		return nil, err
	}
	if cfg.Separator == "" {
		cfg.Separator = "_"
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = defaultTimeout
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = defaultJoinTimeout
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = cfg.JoinTimeout
	}
	if cfg.OnAbsent == nil {
		cfg.OnAbsent = func(string, string) {}
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = defaultMaxInflight
	}
	cfg.Servers = append([]Server(nil), cfg.Servers...)
	return &Aggregator{cfg: cfg, sessions: map[*session]struct{}{}}, nil
}

// checkServers is New's check of a server list.
func checkServers(servers []Server) error {
	seen := map[string]bool{}
	for _, s := range servers {
		switch {
		case s.Name == "":
			return ErrNoName
		case seen[s.Name]:
			return fmt.Errorf("%w: %q", ErrDuplicateName, s.Name)
		case s.Dial == nil && s.Open == nil:
			return fmt.Errorf("%w: %q", ErrNoDial, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// SetServers replaces the downstream servers, for the sessions to come
// and for those running, which go on: a server no longer listed, or named
// in restart, is closed (its entries leave the lists and the client is
// told with list_changed); a new one, or one named in restart, is started
// and joins each running session as a late server does (see join) — the
// client is told with list_changed once its entries are listed. Servers
// neither added, removed nor restarted keep their connections.
func (a *Aggregator) SetServers(servers []Server, restart []string) error {
	if err := checkServers(servers); err != nil {
		return err
	}
	servers = append([]Server(nil), servers...)
	a.mu.Lock()
	old := a.cfg.Servers
	a.cfg.Servers = servers
	sessions := make([]*session, 0, len(a.sessions))
	for s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.mu.Unlock()
	had := map[string]bool{}
	for _, s := range old {
		had[s.Name] = true
	}
	has := map[string]bool{}
	var add []Server
	for _, s := range servers {
		has[s.Name] = true
		if !had[s.Name] || slices.Contains(restart, s.Name) {
			add = append(add, s)
		}
	}
	var remove []string
	for _, s := range old {
		if !has[s.Name] || slices.Contains(restart, s.Name) {
			remove = append(remove, s.Name)
		}
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	for _, s := range sessions {
		s.update(add, remove)
	}
	return nil
}

// servers returns the current server list.
func (a *Aggregator) servers() []Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.Servers
}

// Run serves one upstream session: it reads the client's messages from
// stdin and writes its own to stdout, one JSON-RPC message per line, until
// stdin ends (nil) or ctx is done (ctx.Err()). The downstreams are dialed
// when the client sends initialize and closed before Run returns; every
// goroutine Run starts has ended by then.
//
// A read from stdin cannot be interrupted: when ctx ends, Run closes stdin
// and stdout if they are io.Closers (an io.Pipe end, a file), and otherwise
// waits for the read in progress to return.
func (a *Aggregator) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	s := newSession(a, ctx, stdout)
	a.mu.Lock()
	a.sessions[s] = struct{}{}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.sessions, s)
		a.mu.Unlock()
	}()
	return s.run(ctx, stdin, stdout)
}
