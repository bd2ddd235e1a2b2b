package serve

import (
	"context"
	"io"
	"os/exec"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// SessionMode chooses how legacy (2025-xx) HTTP sessions map onto child
// processes.
type SessionMode string

const (
	// SessionAuto gives each legacy session its own child, the safe choice
	// for stdio servers that accept exactly one initialize per process.
	// Modern clients always share one child.
	SessionAuto SessionMode = "auto"
	// SessionPerSession is SessionAuto, stated explicitly.
	SessionPerSession SessionMode = "per-session"
	// SessionShared multiplexes every legacy session onto one child that is
	// initialized once; later initialize requests are answered from the
	// cached result. The child sees the first session's client
	// capabilities.
	SessionShared SessionMode = "shared"
)

// Config configures a Handler. Zero values select the documented defaults.
type Config struct {
	// Command returns a fresh *exec.Cmd for the MCP stdio server each time a
	// child is needed (the shared child, a restart, a legacy session). It is
	// required. The command is executed directly, never through a shell.
	Command func() *exec.Cmd

	// Run, instead of Command, runs the MCP stdio server as Go code in this
	// process (a goroutine joined by pipes; see stdiohost.StartFunc). Each
	// child the Handler needs is one call of Run.
	Run func(ctx context.Context, stdin io.Reader, stdout io.Writer) error

	// ToolFilter, if set, hides the tools it returns false for: they are
	// dropped from tools/list results, and a tools/call naming one is
	// answered with an error without reaching the child (filter.go).
	ToolFilter func(name string) bool

	// Path is the MCP endpoint. If empty, "/mcp".
	Path string

	// SSEPath is where the legacy HTTP+SSE transport (2024-11-05) opens
	// its streams; its POSTs go to "message" in the same directory (sse.go).
	// If empty, "sse" next to Path: /mcp gives /sse and /message,
	// /servers/x/mcp gives /servers/x/sse and /servers/x/message.
	SSEPath string
	// NoSSE turns the HTTP+SSE transport off: only Path is served.
	NoSSE bool

	// AuthToken, if set, is the bearer token every MCP request must carry.
	AuthToken string

	// AuthTokens are further accepted bearer tokens. Each token is its own
	// principal (see ChildPer); AuthToken counts as one of them.
	AuthTokens []string

	// NamedTokens are further accepted bearer tokens with names for the
	// logs (--auth-token-file); Handler.SetTokens replaces them.
	NamedTokens []auth.NamedToken

	// Auth, if set, admits requests whose token is none of the static
	// ones (an OAuth resource server: auth.Resource) and answers the RFC
	// 9728 metadata of the Handler's path (auth.go).
	Auth auth.Authenticator

	// ChildPer chooses whom the modern clients' child is shared by; if
	// empty, ChildShared.
	ChildPer ChildPer

	// MaxPrincipals caps the children of ChildPerPrincipal (503 for a new
	// principal above it): with OAuth, every subject is one. If zero, 100.
	MaxPrincipals int

	// AllowedOrigins lists Origin values (scheme://host[:port]) accepted in
	// addition to loopback origins, which are always accepted.
	AllowedOrigins []string

	// CheckHost rejects requests whose Host is not a loopback name. Set it
	// when the listener is bound to a loopback address: a DNS-rebinding page
	// can reach such a listener only under a foreign host name.
	CheckHost bool

	// SessionMode; if empty, SessionAuto.
	SessionMode SessionMode

	// ChildProtocol pins the child's era; if empty, ChildAuto: a throwaway
	// sibling is probed with server/discover (and initialize) at Start.
	// The bridge translates for the era the child lacks.
	ChildProtocol ChildProtocol

	// MaxBody limits a request body in bytes (413 above it). If zero, 32 MiB.
	MaxBody int64

	// MaxMessageSize limits one line from the child. If zero, 32 MiB.
	MaxMessageSize int

	// Keepalive is the interval of SSE comment lines on quiet streams. If
	// zero, 15s; negative disables them.
	Keepalive time.Duration

	// SessionIdleTimeout ends a legacy session after this long with no
	// client attached (no open stream, no request being received), even
	// with calls pending. If zero, 30 minutes; negative disables it.
	SessionIdleTimeout time.Duration

	// ReplayBuffer bounds, in bytes, the events a legacy session keeps so
	// that a client can resume a broken stream with Last-Event-ID (also at
	// most 1024 events). If zero, 4 MiB; negative disables resumability.
	ReplayBuffer int

	// MaxSessions caps concurrent legacy sessions. At the cap, the least
	// recently active session with no open stream and nothing pending is
	// ended for a new one (its next request gets 404); only when every
	// session is in use does a new one get 503. If zero, 100.
	MaxSessions int

	// TerminateDelay is the child's grace period after stdin is closed and
	// again after SIGTERM (stdiohost.Options.TerminateDelay). If zero, 2s.
	TerminateDelay time.Duration

	// ChildStartTimeout bounds a child's start: the era probe, the
	// bridge's own handshake with a shared child, and how long a request
	// waits for a child still starting (then 503 with Retry-After). A child
	// that has not answered by then is stopped and started again after a
	// backoff. Servers started by npx, uvx or docker run take seconds on a
	// first run. If zero, 60s.
	ChildStartTimeout time.Duration

	// ChildIdleTimeout stops the own child of a legacy session that has had
	// no request and no open stream for this long, ending the session (its
	// next request gets 404 and the client initializes again). If zero,
	// 5 minutes; negative disables it.
	ChildIdleTimeout time.Duration

	// WarmChildren keeps this many children started ahead of time for new
	// legacy sessions with a child of their own, so that a session's
	// initialize does not wait for a slow child to boot. If zero, none.
	WarmChildren int

	// RestartBackoff is the first delay before restarting a crashed shared
	// child. If zero, 250ms.
	RestartBackoff time.Duration

	// ReadTimeout drops a request whose body stalls this long (no byte
	// arrives). Headers have their own timeout at the http.Server. If zero,
	// 30s; negative disables it.
	ReadTimeout time.Duration

	// MaxBuffered bounds the bytes held for clients across every response
	// stream: past it the stream holding the most is cut, and new requests
	// get 503 while the budget is spent. If zero, 256 MiB.
	MaxBuffered int64

	// MaxInflight bounds the requests in flight toward children (503 above
	// it). If zero, 1024.
	MaxInflight int

	// ChildWriteTimeout bounds every write to a child's stdin; past it the
	// child is taken for hung and killed (stdiohost.Options.WriteTimeout).
	// If zero, 30s; negative disables it.
	ChildWriteTimeout time.Duration

	// ReplicaID, if set, names this replica in the session ids it mints
	// ("ID." followed by the random part) and in an Mcp-Bridge-Replica
	// response header, so that a load balancer without stick tables can
	// route a 2025 session back to the replica that owns it by a prefix of
	// its Mcp-Session-Id (examples/deploy/nginx). Letters, digits, '-' and
	// '_' only, at most 63 of them (ValidReplicaID).
	ReplicaID string

	// Logger receives the bridge's logs and the children's stderr. The zero
	// value discards them.
	Logger zerolog.Logger

	// Telemetry, if set, receives metrics and spans (nil: none, at no cost
	// on the request path).
	Telemetry *telemetry.Telemetry

	// ServerName names this server in a multi-server gateway: the server
	// label of its metrics. Empty for a single-server bridge.
	ServerName string

	// AccessLog writes one info line per HTTP request: methods, tool,
	// status, took_ms, principal, bytes (never a token or a body).
	AccessLog bool
}

// ChildPer chooses how modern (2026-07-28) clients map onto children.
type ChildPer string

const (
	// ChildShared: every modern client shares one child. A legacy-only
	// child is then told of no client capability (roots, sampling,
	// elicitation), so it cannot ask one client something on another's
	// behalf or cache one client's answer for the next.
	ChildShared ChildPer = "shared"
	// ChildPerPrincipal: one child per authenticated identity (today the
	// bearer token; all unauthenticated clients are one identity). Such a
	// child serves one identity only, so it is told the capabilities the
	// bridge can carry across as input rounds.
	ChildPerPrincipal ChildPer = "principal"
)

// tokens returns every accepted bearer token.
func (c *Config) tokens() []string {
	var out []string
	for _, t := range append([]string{c.AuthToken}, c.AuthTokens...) {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// allTokens adds the named ones to tokens.
func (c *Config) allTokens() []string {
	out := c.tokens()
	for _, t := range c.NamedTokens {
		if t.Token != "" {
			out = append(out, t.Token)
		}
	}
	return out
}

func (c *Config) maxPrincipals() int {
	if c.MaxPrincipals > 0 {
		return c.MaxPrincipals
	}
	return 100
}

func (c *Config) perPrincipal() bool { return c.ChildPer == ChildPerPrincipal }

func (c *Config) path() string {
	if c.Path == "" {
		return "/mcp"
	}
	return c.Path
}

func (c *Config) maxBody() int64 {
	if c.MaxBody > 0 {
		return c.MaxBody
	}
	return 32 << 20
}

func (c *Config) readTimeout() time.Duration {
	if c.ReadTimeout == 0 {
		return 30 * time.Second
	}
	return c.ReadTimeout
}

func (c *Config) maxBuffered() int64 {
	if c.MaxBuffered > 0 {
		return c.MaxBuffered
	}
	return 256 << 20
}

func (c *Config) maxMessage() int {
	if c.MaxMessageSize > 0 {
		return c.MaxMessageSize
	}
	return 32 << 20
}

func (c *Config) maxInflight() int64 {
	if c.MaxInflight > 0 {
		return int64(c.MaxInflight)
	}
	return 1024
}

func (c *Config) childWriteTimeout() time.Duration {
	if c.ChildWriteTimeout == 0 {
		return 30 * time.Second
	}
	return c.ChildWriteTimeout
}

func (c *Config) keepalive() time.Duration {
	if c.Keepalive == 0 {
		return 15 * time.Second
	}
	return c.Keepalive
}

func (c *Config) idleTimeout() time.Duration {
	if c.SessionIdleTimeout == 0 {
		return 30 * time.Minute
	}
	return c.SessionIdleTimeout
}

func (c *Config) replayBuffer() int {
	if c.ReplayBuffer == 0 {
		return 4 << 20
	}
	return c.ReplayBuffer
}

func (c *Config) maxSessions() int {
	if c.MaxSessions > 0 {
		return c.MaxSessions
	}
	return 100
}

func (c *Config) startTimeout() time.Duration {
	if c.ChildStartTimeout > 0 {
		return c.ChildStartTimeout
	}
	return 60 * time.Second
}

func (c *Config) childIdleTimeout() time.Duration {
	if c.ChildIdleTimeout == 0 {
		return 5 * time.Minute
	}
	return c.ChildIdleTimeout
}

func (c *Config) sessionMode() SessionMode {
	if c.SessionMode == "" || c.SessionMode == SessionPerSession {
		return SessionAuto
	}
	return c.SessionMode
}
