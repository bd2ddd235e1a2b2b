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
// Streamable HTTP session the remote forgot (legacyremote.go). A host
// pinned to 2026-07-28 gets the translation of any 2025 remote.

// ErrTransportEra is returned by New for a 2026-07-28 remote over the
// HTTP+SSE transport, which only 2025-era servers speak.
var ErrTransportEra = fmt.Errorf("connect: the HTTP+SSE transport (2024-11-05) carries only 2025-era sessions; --protocol %s does not go with --transport sse", ProtocolModern)

// settleTransport checks Transport and pins the era it implies.
func (c *Config) settleTransport() error {
	switch c.Transport {
	case "", httpclient.TransportAuto, httpclient.TransportStreamableHTTP:
		return nil
	case httpclient.TransportSSE:
	default:
		return fmt.Errorf("connect: unknown transport %q (want auto, streamable-http or sse)", c.Transport)
	}
	switch c.Protocol {
	case ProtocolModern:
		return ErrTransportEra
	case "", ProtocolAuto:
		c.Protocol = ProtocolLegacy
	}
	return nil
}
