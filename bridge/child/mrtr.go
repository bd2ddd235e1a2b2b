package child

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// suspensions carries a legacy child's server-to-client requests to modern
// clients as MRTR rounds (2026-07-28 mrtr), with the machine in
// translate/suspension.go: the call that caused the request is answered
// with an InputRequiredResult naming it, and stays in flight at the child;
// the client's retry (a new id, the input responses, the byte-identical
// request state) delivers the answers to the child and takes over the
// call's stream.
type suspensions struct {
	s *Shared
	r translate.Rounds[front]
}

// Input rounds (2026-07-28 mrtr) hold state between a server's request for
// input and the client's answers: bounded in count and in bytes (one
// stream's bound), so neither a child nor a client can grow it at will.
// (A translated legacy session's bounds are legacysession's.)
const MaxRoundInputs = 64 // input requests of one call awaiting answers

// init bounds what one call's rounds hold: MaxRoundInputs requests, and
// their params within one stream's bound.
func (ss *suspensions) init(s *Shared) {
	ss.s = s
	ss.r.MaxInputs, ss.r.MaxBytes = MaxRoundInputs, s.env.Lim.PerStream() // nil: the default bound
}

// front is one client request a call answers: its id, progress token and
// stream.
type front struct {
	id, token []byte
	sk        *stream.Sink
}

// roundCall is a call's face in input rounds; only the child's reader
// goroutine creates it (call.round).
type roundCall struct {
	translate.Call[front]
	ss *suspensions
	c  *Conn
	cl *Call
}

// childRequest handles one server-to-client request of the legacy child.
func (ss *suspensions) childRequest(c *Conn, m *wire.Message) {
	if m.Method == "ping" {
		c.Send(wire.ResultResponse(m.IDBytes(), []byte("{}")))
		return
	}
	if !ss.s.env.PerPrincipal {
		// The child was told of no client capability (bridgeInitParams):
		// asking anyway would put one client's question, or its answer,
		// in reach of another. 2025-11-25 lifecycle §Operation: both
		// parties "MUST ... Only use capabilities that were successfully
		// negotiated".
		c.warn.Warn(c.log, "not_offered").Str("method", m.Method).Msg("shared child asked a client for something it was not offered; refused (see --child-per principal)")
		c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound, "mcp-bridge: clients of a shared child take no "+m.Method+" (run the bridge with --child-per principal)", nil))
		return
	}
	cl := c.soleCall(func(cl *Call) bool { return cl.Complete && translate.AllowsInput(cl.Method) })
	if cl == nil {
		// stdio gives no link from this request to the call that caused it;
		// with several candidates a guess could show one client's prompt to
		// another.
		ss.s.env.Warn.Warn(c.log, "unattributed_request").Str("method", m.Method).Msg("server-to-client request with no single call to attribute it to; refused")
		c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: cannot tell which client this "+m.Method+" is for", nil))
		return
	}
	a := translate.Ask{ID: clone(m.IDBytes()), Method: m.Method}
	if m.Params.Present() {
		a.Params = clone(m.Bytes(m.Params))
	}
	if cl.round == nil {
		// If the call is attached to a client stream, its round ends that
		// stream with the InputRequiredResult now; if it is already
		// suspended, the new request joins the next round.
		id, token, sk := cl.Target()
		cl.round = &roundCall{ss: ss, c: c, cl: cl}
		ss.r.Start(&cl.round.Call, cl.round, front{id: id, token: token, sk: sk}, cl.Caps)
	}
	cl.round.Ask(a)
}

func (rc *roundCall) AnswerBack(a translate.Ask, result []byte, code int, message string) {
	if result != nil {
		rc.c.Send(wire.ResultResponse(a.ID, result))
	} else {
		rc.c.Send(wire.ErrorResponse(a.ID, code, message, nil))
	}
}

// Suspend detaches the call from its stream (the child's messages are held
// until the retry) and ends f's stream with the round.
func (rc *roundCall) Suspend(f front, result []byte) {
	rc.c.suspend(rc.cl)
	rc.ss.s.env.Tel.InputRound()
	if f.sk != nil {
		f.sk.Push(wire.ResultResponse(f.id, result), true)
	}
}

func (rc *roundCall) Attach(f front, resumes bool) {
	if resumes {
		rc.c.resume(rc.cl, f.id, f.token, f.sk)
	}
}

func (rc *roundCall) Expire(error) { rc.c.Cancel(rc.cl, "the input round was never answered") }

func (rc *roundCall) Refused(a translate.Ask, r translate.Refusal, why string) {
	if r == translate.RefusedFull {
		// why says which bound: this call's inputs, or the calls waiting.
		rc.ss.s.env.Warn.Warn(rc.c.log, "round_full").Str("method", a.Method).Str("why", why).Msg("input request refused")
	}
}

func (ss *suspensions) closeAll() { ss.r.Close() }

// Retry hands a modern client's MRTR retry of a call the bridge suspended
// to its round: its input responses answer the child's requests, and sk,
// the retry's stream, takes over the call (which may ask again). ok is
// false when state names no round (expired, or never the bridge's).
// abandon, when not nil, cancels the call: the retry's client went away
// while the call was attached to it.
func (s *Shared) Retry(state string, m *wire.Message, sk *stream.Sink) (ok bool, abandon func(reason string)) {
	f := front{id: clone(m.IDBytes()), sk: sk}
	if m.ProgressToken.Present() {
		f.token = clone(m.Bytes(m.ProgressToken))
	}
	rc, resumed := s.mrtr.r.Retry(state, f, translate.InputResponses(m), m.ClientCapabilities())
	if rc == nil {
		return false, nil
	}
	if !resumed {
		return true, nil
	}
	return true, func(reason string) {
		rc := rc.Face().(*roundCall)
		rc.c.Cancel(rc.cl, reason)
	}
}
