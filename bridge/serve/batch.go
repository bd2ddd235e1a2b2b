package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// serveBatch handles a JSON array body. Batches exist only in 2025-03-26
// (transports §Sending messages: "an array of one or more requests and/or
// notifications" or of responses); 2025-06-18 removed them, and 2026-07-28
// never had them, so any other session gets 400. body starts at its '['.
func (t *sessionTable) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	elems, err := wire.Elements(body, wire.Span{Start: 0, End: len(body)})
	if err != nil || len(elems) == 0 {
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: empty or malformed batch", nil)
		return
	}
	msgs := make([]wire.Message, len(elems))
	for i, e := range elems {
		if err := wire.Parse(body[e.Start:e.End], &msgs[i]); err != nil {
			writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, wire.Refusal(err)+" (a batch element)", nil)
			return
		}
		if msgs[i].Method == "initialize" {
			// 2025-03-26 lifecycle: "The initialization request MUST NOT be
			// part of a JSON-RPC batch".
			writeError(w, http.StatusBadRequest, msgs[i].IDBytes(), wire.CodeInvalidRequest, "Invalid Request: initialize must not be part of a batch", nil)
			return
		}
		if msgs[i].IsModern() {
			writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: 2026-07-28 messages cannot be batched", nil)
			return
		}
	}
	s := t.sessionFor(w, r, nil)
	if s == nil {
		return
	}
	if s.tr != nil {
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: batches cannot be relayed to a 2026-07-28 server", nil)
		return
	}
	s.mu.Lock()
	version := s.version
	s.mu.Unlock()
	if !translate.AllowsBatch(version) {
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported in protocol version "+version, nil)
		return
	}
	requests := 0
	for i := range msgs {
		if msgs[i].Kind == wire.KindRequest {
			requests++
		}
	}
	sk := s.callSink(requests)
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case wire.KindRequest:
			op, tm := t.h.obs.Batched(obsOf(w), r, m)
			cl := &child.Call{OrigID: clone(m.IDBytes()), Method: m.Method, Sink: sk, Sess: s, Via: s.sc, Op: op}
			m = tm
			if !s.trackOr404(w, cl, m) {
				// Whatever of the batch was already sent dies with the
				// session's child.
				return
			}
			if err := s.child().Start(cl, m); err != nil {
				s.Settled(cl)
				sk.Push(wire.ErrorResponse(cl.OrigID, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil), true)
			}
		case wire.KindNotification:
			s.notify(m)
		case wire.KindResponse:
			if ok, _ := s.relayResponse(m); !ok {
				s.log.Debug().RawJSON("id", m.IDBytes()).Msg("batched response to no server request of this session; dropped")
			}
		}
	}
	if requests == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// Several answers: always a stream, one response per event.
	rsp := stream.NewResponder(w, false)
	rsp.ForceSSE() // resumable, or not, like any other stream of the session
	s.stream(r, rsp, sk, nil)
}
