package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// Serve's call sites of the HTTP observation (telemetry.HTTPObserver):
// which writer observes a request, and the gauges /metrics reads here.

// opOf returns the Op of the request w answers, if it is observed.
func opOf(w http.ResponseWriter) *telemetry.Op { return obsOf(w).Op() }

// obsOf returns the ObsWriter of the request w answers, if it is observed:
// w itself, or one that w wraps (an HTTP+SSE POST's, sse.go).
func obsOf(w http.ResponseWriter) *telemetry.ObsWriter {
	switch v := w.(type) {
	case *telemetry.ObsWriter:
		return v
	case *sseReply:
		o, _ := v.w.(*telemetry.ObsWriter)
		return o
	}
	return nil
}

// gauges is what /metrics reads of the Handler.
func (h *Handler) gauges() telemetry.Gauges {
	return telemetry.Gauges{
		Children:       int(h.env.Children.Load()),
		LegacySessions: h.sessions.count(),
		BufferedBytes:  h.lim.Buffered(),
		Inflight:       int(h.lim.Inflight()),
	}
}
