package serve

import (
	"errors"
	"net/http"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/legacysession"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A legacy session in front of a child that speaks only 2026-07-28 shares
// the modern child; bridge/translate/legacysession plays the session (the
// _meta envelope from the session's handshake; ping, logging/setLevel,
// resources/subscribe and list_changed; input rounds as server-to-client
// requests). This face answers on the session's HTTP requests, forwards
// through the child, pushes the round's requests onto the call's stream,
// and runs the listen stream as a child call.

// inputRound is serve's part of an input round (legacysession.Round.Data):
// what the retry needs.
type inputRound struct {
	request []byte // the original request, as sent to the child, without the round's answers
	origID  []byte
	sink    *stream.Sink
	method  string
}

func (t *sessionTable) initializeTranslated(w http.ResponseWriter, m *wire.Message, s *session) {
	s.tr = legacysession.New(s, t.h.lim.PerStream())
	s.tr.Handshake(m)
	s.tr.Discovered(translate.Modern, s.sc.DiscoverResult())
	s.version = s.tr.Version()
	t.add(s)
	s.logStarted(initializeClient(m)) // translated: onto the 2026-07-28 child
	w.Header().Set(wire.HeaderSessionID, s.id)
	w.Header().Set("Content-Type", "application/json")
	w.Write(wire.ResultResponse(m.IDBytes(), s.tr.InitializeResult()))
}

func (s *session) translatedRequest(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	if resp, ok := s.tr.Answer(m.IDBytes(), m); ok {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
		return
	}
	if s.tasksAcrossEras(w, r, m) {
		return
	}
	// Forward returns a fresh slice, which the input rounds may keep.
	var fwd wire.Message
	raw, err := s.tr.Forward(m)
	if err == nil {
		err = wire.Parse(raw, &fwd)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request", nil)
		return
	}
	s.requestWith(w, r, &fwd, func(resp *wire.Message) bool {
		return s.inputRequired(resp, fwd.Raw, m.IDBytes(), m.Method, 0)
	})
}

// inputRequired turns a child's InputRequiredResult (the n-th of the call)
// into real server-to-client requests on the call's stream; the client's
// answers (translatedResponse) make the bridge retry the request.
func (s *session) inputRequired(resp *wire.Message, request, origID []byte, method string, n int) bool {
	if !translate.IsInputRequired(resp) {
		return false
	}
	cl := s.pendingCall(origID)
	if cl == nil {
		return false
	}
	data := &inputRound{request: request, origID: origID, sink: cl.Sink, method: method}
	round, reqs, undeclared, err := s.tr.Begin(string(origID), data, resp, n)
	for _, m := range undeclared {
		s.t.h.warn.Warn(s.log, "input_undeclared").Str("method", m).Msg("the child asked for input the client did not declare a capability for; not asking the client")
	}
	if err != nil {
		if errors.Is(err, legacysession.ErrTooManyInputs) {
			s.t.h.warn.Warn(s.log, "round_full").Msg("the input round asks for too many inputs; call failed")
		}
		s.finishCall(origID, wire.ErrorResponse(origID, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil))
		return true
	}
	s.t.h.tel.InputRound()
	if len(reqs) == 0 {
		// Only a request state: retry at once (connect pauses first,
		// legacysession.RetryPause; here the child is local and a timer
		// would outlive the session).
		s.retryInput(round)
		return true
	}
	for _, msg := range reqs {
		cl.Sink.Push(msg, false)
	}
	return true
}

// translatedResponse takes a client's answer to one of the bridge's
// server-to-client requests.
func (s *session) translatedResponse(m *wire.Message) {
	round, complete := s.tr.Answered(m)
	switch {
	case round == nil:
		s.log.Debug().RawJSON("id", m.IDBytes()).Msg("response to no request of the bridge; dropped")
	case !complete:
	case round.Err() != nil:
		origID := round.Data.(*inputRound).origID
		s.finishCall(origID, wire.ErrorResponse(origID, wire.CodeInternalError, "mcp-bridge: "+round.Err().Error(), nil))
	default:
		s.retryInput(round)
	}
}

// retryInput re-sends the request with the collected input responses and
// the byte-identical request state; the child connection gives it a new
// id (mrtr: the retry's id "MUST be different").
func (s *session) retryInput(round *legacysession.Round) {
	ir := round.Data.(*inputRound)
	var retry wire.Message
	raw, err := legacysession.Retry(ir.request, round, nil)
	if err == nil {
		err = wire.Parse(raw, &retry)
	}
	if err != nil {
		s.finishCall(ir.origID, wire.ErrorResponse(ir.origID, wire.CodeInternalError, "mcp-bridge: cannot build the retry", nil))
		return
	}
	cl := &child.Call{Method: ir.method, Sink: ir.sink, Sess: s, Via: s.sc, OrigID: ir.origID, LogLevel: retry.LogLevel != ""}
	cl.OnFinal = func(resp *wire.Message) bool {
		return s.inputRequired(resp, ir.request, ir.origID, ir.method, round.N+1)
	}
	cl.ChildID = s.t.h.env.IDs.Add(1)
	s.replacePending(cl)
	if err := s.child().Start(cl, &retry); err != nil {
		s.finishCall(ir.origID, wire.ErrorResponse(ir.origID, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil))
	}
}

// replacePending puts a retry's call in the place of the call it continues
// (same client id, same position in arrival order).
func (s *session) replacePending(cl *child.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byOrig[string(cl.OrigID)]; old != nil {
		if i := slices.Index(s.pending, old); i >= 0 {
			s.pending[i] = cl
		}
	}
	s.byOrig[string(cl.OrigID)] = cl
}

// finishCall ends a translated call with msg as its response.
func (s *session) finishCall(origID, msg []byte) {
	if cl := s.pendingCall(origID); cl != nil {
		s.Settled(cl)
		cl.Sink.Push(msg, true)
	}
}

func (s *session) translatedNotify(m *wire.Message) bool {
	return s.tr.Notify(m.Method)
}

// OpenListen opens the session's subscriptions/listen stream at the child
// (legacysession.Listener). Its notifications reach the client as the
// era's unsolicited notifications, on the GET stream.
func (s *session) OpenListen(filter []byte) (stop func()) {
	var m wire.Message
	if wire.Parse(wire.Request([]byte("0"), "subscriptions/listen", s.tr.ListenParams(filter)), &m) != nil {
		return nil
	}
	conn := s.child()
	cl := &child.Call{Method: "subscriptions/listen", OrigID: []byte(`"listen"`)}
	cl.DeliverFn = func(_ []byte, n *wire.Message, final bool) {
		if final || n == nil || n.Kind == wire.KindInvalid {
			return
		}
		var pm *wire.Message // for an in-process client (entry.go)
		if s.entry != nil {
			pm = new(wire.Message)
		}
		if out := legacysession.ListenNotificationParsed(n, pm); out != nil {
			s.routeWith(out, pm, false)
		}
	}
	if err := conn.Start(cl, &m); err != nil {
		s.log.Warn().Err(err).Msg("cannot open the session's subscriptions/listen stream")
		return nil
	}
	return func() { conn.Cancel(cl, "the session's listen stream ended") }
}
