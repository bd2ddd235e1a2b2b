package hostio

import (
	"encoding/json"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// hostNotices tracks whether the host can take a log notification from
// the bridge itself.
type hostNotices struct {
	ready atomic.Bool // the host sent notifications/initialized (dispatch sets it)
}

// LogNotice sends the host an MCP log notification (notifications/message)
// of level, from logger "mcp-bridge", carrying data: something a person
// at the host has to act on (a device login's code), which stderr alone
// may not reach. It reports whether it was sent.
//
// Only once the host sent notifications/initialized. 2025-11-25 lifecycle
// lets a server log earlier ("The server SHOULD NOT send requests other
// than pings and logging before receiving the initialized notification"),
// but a host still waiting for its initialize's answer has no session to
// show it in, and some treat any other line as a protocol error. A
// 2026-07-28 host, which sends no initialized, gets nothing (nor does one
// Config.Notices refuses): its stdio carries only "Notifications that
// relate to an in-flight request, such as notifications/progress and
// notifications/message" (basic/transports/stdio), and a login belongs to
// no request of its own.
func (h *Host) LogNotice(level string, data any) bool {
	if !h.notices.ready.Load() || (h.cfg.Notices != nil && !h.cfg.Notices()) {
		return false
	}
	params, err := json.Marshal(struct {
		Level  string `json:"level"`
		Logger string `json:"logger"`
		Data   any    `json:"data"`
	}{level, "mcp-bridge", data})
	if err != nil {
		return false
	}
	h.Write(wire.Notification("notifications/message", params))
	return true
}
