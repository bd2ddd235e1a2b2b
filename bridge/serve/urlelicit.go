package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// URL-mode elicitation for 2026-07-28 clients of a legacy child: the
// mapping is translate's (urlelicit.go); serve only hooks it into the
// call's final response, the retry, and the child's unrouted
// notifications (translate.Completions.Record). A URL round keeps nothing in the bridge: the retry
// carries the request and the elicitation ids.

// urlOnFinal returns the onFinal hook of a modern client's call to a
// legacy child: a URLElicitationRequiredError (-32042, which a 2026-07-28
// client must not get) becomes a URL input round, or -32021 when the
// client did not declare URL-mode elicitation.
func urlOnFinal(conn *child.Conn, cl *child.Call) func(*wire.Message) bool {
	return func(resp *wire.Message) bool {
		out := translate.URLAnswer(resp, cl.Method, cl.Caps, resp.IDBytes())
		if out == nil {
			return false
		}
		var m wire.Message
		if wire.Parse(out, &m) != nil {
			return false
		}
		cl.Op.Result(&m)
		conn.Route(cl, &m, true)
		return true
	}
}

// urlRetry takes a modern client's retry of a URL round: declined, it is
// answered here; accepted, it waits for the child's completion
// notifications and returns the request the child gets (the legacy
// client's own retry of the failed request). It returns nil, false for
// any other request.
func (h *Handler) urlRetry(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *child.Shared) (*wire.Message, bool) {
	rr, ok := translate.ReadURLRetry(m)
	if !ok {
		return nil, false
	}
	if rr.Declined {
		writeError(w, http.StatusOK, m.IDBytes(), wire.CodeInternalError, translate.URLDeclined, nil)
		return nil, true
	}
	if !sc.URLs.Wait(r.Context(), rr.IDs, translate.URLWait) {
		if r.Context().Err() != nil {
			return nil, true // the client left
		}
		h.log.Debug().Strs("elicitations", rr.IDs).Msg("URL elicitation not reported complete; retrying the call anyway")
	}
	var lm wire.Message
	if err := wire.Parse(rr.Request, &lm); err != nil {
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request", nil)
		return nil, true
	}
	return &lm, false
}
