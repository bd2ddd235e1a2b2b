package connect

import (
	"context"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// URL-mode elicitation for a 2026-07-28 host in front of a legacy remote:
// the mapping is translate's (urlelicit.go); connect hooks it into the
// call's final answer, the host's retry, and the remote's notifications.
// A URL round keeps nothing here: the retry carries the request and the
// elicitation ids.

// urlAnswer returns the answer a 2026-07-28 host gets, under id, for a
// URLElicitationRequiredError (-32042) the remote sent for the call: a URL
// input round, or -32021 when the host did not declare URL-mode
// elicitation. It returns nil for any other response.
func (c *call) urlAnswer(fm *wire.Message, id []byte) []byte {
	return translate.URLAnswer(fm, c.method, c.Caps(), id)
}

// urlRetry takes the host's retry of a URL round: declined, it is answered
// here; accepted, it goes to the remote as the legacy client's own retry
// of the failed request, once the remote reported the elicitations
// complete (or urlWait passed).
func (h *modernHost) urlRetry(ctx context.Context, p *pending, m *wire.Message) {
	rr, _ := translate.ReadURLRetry(m)
	if rr.Declined {
		h.b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInternalError, translate.URLDeclined, nil))
		return
	}
	if !h.urls.Wait(ctx, rr.IDs, translate.URLWait) {
		if ctx.Err() != nil {
			return
		}
		h.b.log.Debug().Strs("elicitations", rr.IDs).Msg("URL elicitation not reported complete; retrying the call anyway")
	}
	var lm wire.Message
	if err := wire.Parse(rr.Request, &lm); err != nil {
		h.b.answerError(p, err)
		return
	}
	h.call(ctx, p, &lm)
}
