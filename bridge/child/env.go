package child

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// Protocol pins the era of the child, or lets the bridge detect it.
type Protocol string

const (
	Auto   Protocol = "auto"
	Modern Protocol = "modern" // 2026-07-28 only
	Legacy Protocol = "legacy" // the 2025 handshake only
)

// Env is what the children take from the front that serves them (serve's
// Handler builds one in New): the settings that concern a child, the
// budgets and logs they share with the front, and how a child starts. It
// is listed here rather than reached through the Handler so that what a
// child depends on is explicit.
type Env struct {
	Log   zerolog.Logger
	Warn  *ratelog.Kinds   // rate limit of repeated warnings
	Lim   *stream.Limits   // budgets shared by every stream and child
	Tel   *telemetry.Scope // nil: no metrics
	Crash *stdiohost.CrashWatch
	// Life owns the supervisors of the children started on demand (a
	// principal's, the legacy-shared one); Go refuses once it closes.
	Life *lifecycle.Group
	// Closing is closed when the front begins its shutdown: requests
	// waiting for a child stop waiting.
	Closing <-chan struct{}
	// Launch starts one child with opts: a process or an in-process
	// server. Every kind of child (shared, per session, per principal,
	// probe sibling) starts through it (StartProcess).
	Launch func(opts stdiohost.Options) (*stdiohost.Host, error)

	IDs      atomic.Int64 // child-side ids, unique across all children
	Children atomic.Int64 // child processes running

	// Protocol is --child-protocol; "" is Auto.
	Protocol Protocol
	// PerPrincipal: every principal gets a child of its own
	// (--child-per principal), up to MaxPrincipals.
	PerPrincipal  bool
	MaxPrincipals int
	// WarmChildren children are kept started for new legacy sessions
	// (--warm-children); 0: none.
	WarmChildren int
	// ToolFilter hides the tools it returns false for (filter.go).
	ToolFilter func(name string) bool
	// ReplicaID names this replica in task ids.
	ReplicaID      string
	StartTimeout   time.Duration
	RestartBackoff time.Duration
	MaxMessageSize int
	TerminateDelay time.Duration
	WriteTimeout   time.Duration // a write to a child's stdin
}

// StartHost starts a child for conn with the Env's settings.
func (e *Env) StartHost(conn *Conn) (*stdiohost.Host, error) {
	host, err := e.StartProcess(e.HostOptions(conn))
	if err != nil {
		return nil, err
	}
	conn.attach(host)
	return host, nil
}

// StartProcess starts a child process, counted while it runs (the
// children gauge of /metrics).
func (e *Env) StartProcess(opts stdiohost.Options) (*stdiohost.Host, error) {
	opts.OnExit = func() { e.Children.Add(-1) }
	e.Children.Add(1)
	host, err := e.Launch(opts)
	if err != nil {
		e.Children.Add(-1)
	}
	return host, err
}

// HostOptions are the stdiohost options of a child for conn, which it
// binds to the Env's budgets.
func (e *Env) HostOptions(conn *Conn) stdiohost.Options {
	if !conn.bound {
		// Once: a connection that outlives its child (LegacyShared) is
		// read by requests while the next child starts.
		conn.lim, conn.warn, conn.filter, conn.bound = e.Lim, e.Warn, e.ToolFilter, true
		conn.replica = e.ReplicaID
	}
	return stdiohost.Options{
		Watch:          e.Crash,
		OnMessage:      conn.onMessage,
		OnBadLine:      conn.onBadLine,
		MaxMessageSize: e.MaxMessageSize,
		TerminateDelay: e.TerminateDelay,
		WriteTimeout:   e.WriteTimeout,
		Logger:         conn.log,
	}
}
