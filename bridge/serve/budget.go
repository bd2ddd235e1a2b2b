package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Input rounds (2026-07-28 mrtr) hold state between a server's request for
// input and the client's answers: bounded in count and in bytes (one
// stream's bound), so neither a child nor a client can grow it at will.
// (A translated legacy session's bounds are legacysession's.)
const maxRoundInputs = 64 // input requests of one call awaiting answers

// newLimits returns the Handler's budgets (stream.Limits) as cfg sets them.
func newLimits(cfg *Config, h *Handler) *stream.Limits {
	return stream.NewLimits(h.log, h.warn, cfg.maxInflight(), cfg.maxBuffered(), int64(cfg.maxMessage()))
}

// newSink returns a sink charged to the Handler's budget.
func (h *Handler) newSink(want int) *stream.Sink { return h.lim.NewSink(want) }

// admit refuses a new request with 503 and Retry-After while the budgets
// are spent (stream.Limits.Busy says why).
func (h *Handler) admit(w http.ResponseWriter, id []byte) bool {
	why := h.lim.Busy()
	if why == "" {
		return true
	}
	h.warn.Warn(h.log, "busy").Str("reason", why).Msg("request refused with 503")
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, id, wire.CodeInternalError, why, nil)
	return false
}
