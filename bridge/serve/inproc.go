package serve

import "github.com/mcp-bridge/mcp-bridge/stdiohost"

// launch starts one child with opts: a process (Config.Command, its
// environment scrubbed by command) or an in-process server (Config.Run).
// Every kind of child (shared, per session, per principal, probe sibling)
// starts here.
func (h *Handler) launch(opts stdiohost.Options) (*stdiohost.Host, error) {
	if h.cfg.Run != nil {
		return stdiohost.StartFunc(h.cfg.Run, opts)
	}
	return stdiohost.Start(h.command(), opts)
}
