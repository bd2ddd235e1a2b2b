package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// stateTTL is how long a legacy child's server-to-client request may wait
// for the modern client's retry.
const stateTTL = translate.InputTTL

// suspensions carries a legacy child's server-to-client requests to modern
// clients as MRTR rounds (2026-07-28 mrtr): the call that caused the
// request is answered with an InputRequiredResult naming it, and stays
// in flight at the child; the client's retry (a new id, the input
// responses, the byte-identical request state) delivers the answers to the child and
// takes over the call's stream.
type suspensions struct {
	s       *sharedChild
	mu      sync.Mutex
	byToken map[string]*suspension
	byCall  map[*call]*suspension
}

type suspension struct {
	token   string
	conn    *childConn
	cl      *call
	asks    []childAsk // the child's requests the client has not answered
	bytes   int        // size of the asks' params
	nextKey int
	timer   *time.Timer
}

type childAsk struct {
	key    string
	id     []byte // the child's request id
	method string
	params []byte
}

// childRequest handles one server-to-client request of the legacy child.
func (ss *suspensions) childRequest(c *childConn, m *wire.Message) {
	if m.Method == "ping" {
		c.send(wire.ResultResponse(m.IDBytes(), []byte("{}")))
		return
	}
	if !ss.s.h.cfg.perPrincipal() {
		// The child was told of no client capability (bridgeInitParams):
		// asking anyway would put one client's question, or its answer,
		// in reach of another. 2025-11-25 lifecycle §Operation: both
		// parties "MUST ... Only use capabilities that were successfully
		// negotiated".
		c.warn.Warn(c.log, "not_offered").Str("method", m.Method).Msg("shared child asked a client for something it was not offered; refused (see --child-per principal)")
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound, "mcp-bridge: clients of a shared child take no "+m.Method+" (run the bridge with --child-per principal)", nil))
		return
	}
	cl := c.soleCall(func(cl *call) bool { return cl.complete && translate.AllowsInput(cl.method) })
	if cl == nil {
		// stdio gives no link from this request to the call that caused it;
		// with several candidates a guess could show one client's prompt to
		// another.
		ss.s.h.warn.Warn(c.log, "unattributed_request").Str("method", m.Method).Msg("server-to-client request with no single call to attribute it to; refused")
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: cannot tell which client this "+m.Method+" is for", nil))
		return
	}
	if !translate.Covers(cl.caps, m.Method, m.Bytes(m.Params)) {
		// mrtr: the server "MUST NOT" ask for input the client's
		// clientCapabilities did not declare. Decline on its behalf.
		if m.Method == "elicitation/create" {
			c.send(wire.ResultResponse(m.IDBytes(), []byte(`{"action":"decline"}`)))
		} else {
			c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound, "mcp-bridge: the client did not declare the capability for "+m.Method, nil))
		}
		return
	}
	var params []byte
	if m.Params.Present() {
		params = clone(m.Bytes(m.Params))
	}
	ss.mu.Lock()
	if ss.byToken == nil {
		ss.byToken, ss.byCall = map[string]*suspension{}, map[*call]*suspension{}
	}
	sp := ss.byCall[cl]
	if sp == nil {
		sp = &suspension{conn: c, cl: cl}
		ss.byCall[cl] = sp
	}
	if len(sp.asks) >= maxRoundInputs || sp.bytes+len(params) > c.perStream() {
		ss.mu.Unlock()
		ss.s.h.warn.Warn(c.log, "round_full").Str("method", m.Method).Msg("too many input requests open for one call; refused")
		c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many input requests open for this call", nil))
		return
	}
	sp.nextKey++
	sp.bytes += len(params)
	sp.asks = append(sp.asks, childAsk{key: "input-" + strconv.Itoa(sp.nextKey), id: clone(m.IDBytes()), method: m.Method, params: params})
	ss.mu.Unlock()

	// If the call is attached to a client stream, end that stream with the
	// InputRequiredResult now; if it is already suspended, the new
	// request joins the next round.
	_, _, sk := cl.target()
	if sk != nil {
		c.suspend(cl)
		sk.Push(ss.round(sp, cl), true)
	}
}

// round mints a fresh request state for sp and returns the
// InputRequiredResult response for its open asks, under the call's
// current client id.
func (ss *suspensions) round(sp *suspension, cl *call) []byte {
	ss.mu.Lock()
	if sp.token != "" {
		delete(ss.byToken, sp.token)
	}
	sp.token = translate.NewState()
	ss.byToken[sp.token] = sp
	if sp.timer != nil {
		sp.timer.Stop()
	}
	token := sp.token
	sp.timer = time.AfterFunc(stateTTL, func() { ss.expire(token) })
	inputs := make([]translate.Input, len(sp.asks))
	for i, a := range sp.asks {
		inputs[i] = translate.Input{Key: a.key, Method: a.method, Params: a.params}
	}
	b := translate.InputRequired(inputs, sp.token)
	ss.mu.Unlock()
	ss.s.h.tel.InputRound()
	id, _, _ := cl.target()
	return wire.ResultResponse(id, b)
}

// take removes and returns the suspension a request state names.
func (ss *suspensions) take(token string) *suspension {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sp := ss.byToken[token]
	if sp != nil {
		delete(ss.byToken, token)
		sp.timer.Stop()
	}
	return sp
}

// expire gives up on a client that never retried: the child's requests get
// errors and the call is cancelled at the child.
func (ss *suspensions) expire(token string) {
	sp := ss.take(token)
	if sp == nil {
		return
	}
	ss.mu.Lock()
	delete(ss.byCall, sp.cl)
	asks := sp.asks
	ss.mu.Unlock()
	for _, a := range asks {
		sp.conn.send(wire.ErrorResponse(a.id, wire.CodeInternalError, "mcp-bridge: the client never answered", nil))
	}
	sp.conn.cancel(sp.cl, "the input round was never answered")
}

func (ss *suspensions) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, sp := range ss.byToken {
		sp.timer.Stop()
	}
	ss.byToken, ss.byCall = nil, nil
}

// resumeInput handles a modern client's MRTR retry of a call the bridge
// suspended: its input responses answer the child's requests, and the
// retry's stream takes over the call (which may ask again).
func (h *Handler) resumeInput(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *sharedChild, token string) {
	ss := &sc.mrtr
	sp := ss.take(token)
	if sp == nil {
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidParams, translate.ExpiredState, nil)
		return
	}
	responses := translate.InputResponses(m)
	ss.mu.Lock()
	var rest []childAsk
	for _, a := range sp.asks {
		if v, ok := responses[a.key]; ok {
			sp.conn.send(wire.ResultResponse(a.id, v))
		} else {
			rest = append(rest, a)
		}
	}
	sp.asks, sp.bytes = rest, 0
	for _, a := range rest {
		sp.bytes += len(a.params)
	}
	if len(rest) == 0 {
		delete(ss.byCall, sp.cl)
	}
	ss.mu.Unlock()

	sk := h.newSink(1)
	var token2 []byte
	if m.ProgressToken.Present() {
		token2 = clone(m.Bytes(m.ProgressToken))
	}
	if len(rest) > 0 {
		// Still waiting on answers: another round, on the retry's stream.
		sp.cl.mu.Lock()
		sp.cl.origID = clone(m.IDBytes())
		sp.cl.mu.Unlock()
		sk.Push(ss.round(sp, sp.cl), true)
	} else {
		sp.conn.resume(sp.cl, clone(m.IDBytes()), token2, sk)
	}
	rsp := stream.NewResponder(w, true)
	switch h.streams.Pump(r.Context(), rsp, sk, nil, nil) {
	case stream.PumpClientGone:
		sk.Close()
		if len(rest) == 0 {
			sp.conn.cancel(sp.cl, "client closed the stream")
		}
	}
}

// stateOf returns the bridge-minted request state of a retry, or "".
func stateOf(m *wire.Message) string {
	s := translate.RetryState(m)
	if translate.IsBridgeState(s) {
		return s
	}
	return ""
}
