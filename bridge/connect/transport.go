package connect

import (
	"fmt"

	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The HTTP transport is chosen below the bridge: httpclient speaks
// Streamable HTTP or the legacy HTTP+SSE transport (2024-11-05) behind the
// same calls, so that an SSE remote is, to the bridge, a 2025 session
// remote. Its session is its stream: when the stream ends, requests in
// flight get errors (the transport cannot resume), and the next request
// meets a 404 and replays the host's handshake on a new stream, as for a
// Streamable HTTP session the remote forgot (legacyremote.go).
//
// The era is still what the server answers: a 2025-only server behind the
// stream (server-everything's SSE mode, the Go SDK's SSE handler) gets a
// 2026-07-28 host translated like any legacy remote, while a server that
// answers server/discover itself (a dual-era child behind supergateway's
// SSE output) is passed 2026-07-28 messages as they are.

// checkTransport refuses an unknown Transport.
func (c *Config) checkTransport() error {
	switch c.Transport {
	case "", httpclient.TransportAuto, httpclient.TransportStreamableHTTP, httpclient.TransportSSE:
		return nil
	}
	return fmt.Errorf("connect: unknown transport %q (want auto, streamable-http or sse)", c.Transport)
}
