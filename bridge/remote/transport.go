package remote

import (
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The HTTP transport is chosen below the bridge: httpclient speaks
// Streamable HTTP or the legacy HTTP+SSE transport (2024-11-05) behind the
// same calls, so that an SSE remote is, to the bridge, a 2025 session
// remote. Its session is its stream: when the stream ends, requests in
// flight get errors (the transport cannot resume), and the next request
// meets a 404 and replays the host's handshake on a new stream, as for a
// Streamable HTTP session the remote forgot (session.go). A stream
// that breaks while the host is idle is re-established at once, with
// backoff, so that the server's notifications reach the host again
// without waiting for its next request (sseStreamLost).
//
// The era is still what the server answers: a 2025-only server behind the
// stream (server-everything's SSE mode, the Go SDK's SSE handler) gets a
// 2026-07-28 host translated like any legacy remote, while a server that
// answers server/discover itself (a dual-era child behind supergateway's
// SSE output) is passed 2026-07-28 messages as they are.

// checkTransport refuses an unknown Transport.
func checkTransport(t httpclient.Transport) error {
	switch t {
	case "", httpclient.TransportAuto, httpclient.TransportStreamableHTTP, httpclient.TransportSSE:
		return nil
	}
	return fmt.Errorf("remote: unknown transport %q (want auto, streamable-http or sse)", t)
}

// sseRecovery paces the re-establishment of broken HTTP+SSE streams
// across cycles: a server that accepts a stream and drops it at once must
// not be redialled in a tight loop.
type sseRecovery struct {
	mu     sync.Mutex
	bo     *backoff.ExponentialBackOff
	opened time.Time // when the last re-established stream opened
}

// sseStableAfter is how long a re-established stream must live for the
// next break to start the backoff over.
const sseStableAfter = 30 * time.Second

func (r *sseRecovery) next() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bo == nil || (!r.opened.IsZero() && time.Since(r.opened) > sseStableAfter) {
		r.bo = ListenBackoff()
		r.opened = time.Time{}
	}
	return r.bo.NextBackOff()
}

func (r *sseRecovery) reopened() {
	r.mu.Lock()
	r.opened = time.Now()
	r.mu.Unlock()
}

// sseStreamLost is called when the GET stream of session sid reported the
// session gone. On HTTP+SSE that means the stream broke: the bridge
// re-establishes the session on a new stream itself, on a goroutine of
// its own (reinitialize stops the GET stream, whose goroutine this is),
// and reports true. On Streamable HTTP it does nothing and reports false.
func (r *Remote) sseStreamLost(sid string) bool {
	if !r.client.SpeaksSSE() {
		return false
	}
	r.log.Info().Msg("HTTP+SSE stream lost: re-establishing the session on a new stream")
	// Refused once Close has joined the streams: the bridge is stopping.
	r.streams.Go(func() { r.reestablishSSE(sid) })
	return true
}

func (r *Remote) reestablishSSE(sid string) {
	ctx := r.streamCtx
	for {
		wait := r.sseRec.next()
		if !SleepCtx(ctx, wait) || r.sess.handshake() == nil {
			return
		}
		err := r.sess.reinitialize(ctx, sid)
		if err == nil {
			r.sseRec.reopened()
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn().Err(err).Msg("HTTP+SSE: re-establishing the session failed; retrying")
		sid = r.client.SessionID()
	}
}
