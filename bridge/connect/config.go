package connect

import (
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// Protocol pins the remote server's era. When the host speaks the other
// era, the bridge translates.
type Protocol string

const (
	ProtocolAuto   Protocol = "auto"   // detect the remote's era from its answers
	ProtocolModern Protocol = "modern" // the remote speaks 2026-07-28
	ProtocolLegacy Protocol = "legacy" // the remote speaks only 2025-xx (handshake and sessions)
)

// Config configures a Bridge. Zero values select the documented defaults.
type Config struct {
	// URL is the remote MCP endpoint. Required.
	URL string

	// Header is sent with every request (Authorization, -H headers).
	Header http.Header

	// HTTPClient, if set, sends the requests (tests, custom TLS).
	HTTPClient *http.Client

	// Protocol; if empty, ProtocolAuto.
	Protocol Protocol

	// Transport is the HTTP transport toward the remote: Streamable HTTP,
	// the legacy HTTP+SSE transport (URL is then the SSE URL; the remote
	// is of the 2025 era), or, if empty or auto, Streamable HTTP with a
	// fallback to HTTP+SSE (httpclient/legacysse.go).
	Transport httpclient.Transport

	// RequestTimeout bounds each request; zero means no timeout (long tool
	// calls are legitimate; a host's own timeout cancels them).
	RequestTimeout time.Duration

	// MaxMessageSize bounds one line from the host and one message from the
	// remote. If zero, 32 MiB.
	MaxMessageSize int

	// MaxRetries and MaxRetryWait configure retries of requests that cannot
	// have reached the server (dial errors) and of 429/503 answers. Zero
	// selects httpclient's defaults (4 retries, 10s cap); MaxRetries < 0
	// disables retries.
	MaxRetries   int
	MaxRetryWait time.Duration

	// ShutdownTimeout bounds how long in-flight requests may finish after
	// the host closes stdin. If zero, 10s.
	ShutdownTimeout time.Duration

	// Logger receives logs; the zero value discards them. It must not write
	// to the host's stdout.
	Logger zerolog.Logger

	// Telemetry, if set, receives metrics and spans (nil: none).
	Telemetry *telemetry.Telemetry

	// ServerName names the remote in a multi-server gateway: the server
	// label of its metrics. Empty for a plain connect.
	ServerName string

	// HideRemoteDetail is for a host that is not the party who configured
	// the remote (a gateway's clients reaching a remote entry): JSON-RPC
	// errors then carry the remote's HTTP status but not its body or
	// WWW-Authenticate, which may describe an internal server. Errors
	// never carry the URL's user info or query, nor header values,
	// either way.
	HideRemoteDetail bool

	// ToolFilter, if set, hides the remote's tools it returns false for
	// (--tools-allow/--tools-deny): they are left out of every tools/list
	// result, and a tools/call of one is answered with an error without
	// reaching the remote (toolfilter.go).
	ToolFilter func(name string) bool
}

func (c *Config) maxMessageSize() int {
	if c.MaxMessageSize > 0 {
		return c.MaxMessageSize
	}
	return 32 << 20
}
