package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// goneConn stands in for the shared child while it is down: every send
// fails with errChildGone.
var goneConn = func() *childConn {
	c := newChildConn(new(atomic.Int64), nil, zerolog.Nop())
	c.gone = true
	return c
}()

// translation is the state of a legacy session in front of a child that
// speaks only 2026-07-28. The session shares the modern child; every
// request it sends gets the _meta envelope from the session's handshake,
// the era's session features are played by the bridge (ping,
// logging/setLevel, resources/subscribe, list_changed), and the child's
// InputRequiredResults become server-to-client requests on the
// session's stream.
type translation struct {
	caps, clientInfo []byte // from the client's initialize

	mu     sync.Mutex
	level  string
	subs   map[string]bool
	listen *call
	inputs map[string]*inputRound // bridge request id -> round
	next   int
}

// inputRound is one InputRequiredResult being answered by the client.
type inputRound struct {
	request []byte // the original request, as sent to the child, without the round's answers
	origID  []byte
	sink    *sink
	method  string
	state   []byte            // the request state, verbatim (raw JSON string), or nil
	keys    map[string]string // bridge request id -> inputRequests key
	answers map[string][]byte // key -> result
	bytes   int               // size of answers
}

func (t *sessionTable) initializeTranslated(w http.ResponseWriter, m *wire.Message, s *session) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if m.Params.Present() {
		json.Unmarshal(m.Bytes(m.Params), &p)
	}
	s.tr = &translation{
		caps:       orEmptyObject(p.Capabilities),
		clientInfo: p.ClientInfo,
		subs:       map[string]bool{},
		inputs:     map[string]*inputRound{},
	}
	s.version = translate.NegotiateLegacy(p.ProtocolVersion)
	t.add(s)
	s.logStarted(initializeClient(m)) // translated: onto the 2026-07-28 child
	w.Header().Set(wire.HeaderSessionID, s.id)
	w.Header().Set("Content-Type", "application/json")
	disc := s.sc.discoverResult()
	w.Write(wire.ResultResponse(m.IDBytes(), translate.TasksToLegacy(translate.InitializeFromDiscover(disc, s.version), disc)))
}

// envelope returns the _meta fields every forwarded request carries
// (2026-07-28 basic §_meta: protocolVersion and clientCapabilities "MUST be
// included on every request").
func (tr *translation) envelope() []byte {
	tr.mu.Lock()
	level := tr.level
	tr.mu.Unlock()
	return translate.EnvelopeFields(translate.Modern, tr.caps, tr.clientInfo, level)
}

func writeResult(w http.ResponseWriter, id []byte, result string) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(wire.ResultResponse(id, []byte(result)))
}

func (s *session) translatedRequest(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	tr := s.tr
	switch m.Method {
	case "ping":
		// Removed in 2026-07-28; the bridge answers for the child.
		writeResult(w, m.IDBytes(), "{}")
		return
	case "logging/setLevel":
		// Per request in 2026-07-28: kept here, sent as _meta logLevel.
		level, _ := wire.StringField(m.Raw, m.Params, "level")
		tr.mu.Lock()
		tr.level = level
		tr.mu.Unlock()
		writeResult(w, m.IDBytes(), "{}")
		return
	case "resources/subscribe", "resources/unsubscribe":
		tr.mu.Lock()
		if m.Method == "resources/subscribe" && !tr.subs[m.URI] && len(tr.subs) >= maxSubscriptions {
			tr.mu.Unlock()
			writeError(w, http.StatusOK, m.IDBytes(), wire.CodeInternalError, "mcp-bridge: too many resource subscriptions in this session", nil)
			return
		}
		if m.Method == "resources/subscribe" {
			tr.subs[m.URI] = true
		} else {
			delete(tr.subs, m.URI)
		}
		tr.mu.Unlock()
		s.startListen()
		writeResult(w, m.IDBytes(), "{}")
		return
	}
	if s.tasksAcrossEras(w, r, m) {
		return
	}
	// WithMetaFields returns a fresh slice, which the input rounds may keep.
	var fwd wire.Message
	if err := wire.Parse(wire.WithMetaFields(m, tr.taskEnvelope(m)), &fwd); err != nil {
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidRequest, "Invalid Request", nil)
		return
	}
	s.requestWith(w, r, &fwd, func(resp *wire.Message) bool {
		return s.inputRequired(resp, fwd.Raw, m.IDBytes(), m.Method)
	})
}

// inputRequired turns a child's InputRequiredResult into real
// server-to-client requests on the call's stream; the client's answers
// (translatedResponse) make the bridge retry the request.
func (s *session) inputRequired(resp *wire.Message, request, origID []byte, method string) bool {
	if !translate.IsInputRequired(resp) {
		return false
	}
	tr := s.tr
	cl := s.pendingCall(origID)
	if cl == nil {
		return false
	}
	ir, err := translate.ReadRound(resp)
	if err != nil {
		s.finishCall(origID, wire.ErrorResponse(origID, wire.CodeInternalError, "mcp-bridge: the server sent an input round the bridge cannot read: "+err.Error(), nil))
		return true
	}
	s.t.h.tel.InputRound()
	round := &inputRound{request: request, origID: origID, sink: cl.sink, method: method, state: clone(ir.State),
		keys: map[string]string{}, answers: map[string][]byte{}}
	var out [][]byte
	if keys := ir.Requests; keys != nil {
		tr.mu.Lock()
		if len(keys) > maxRoundInputs || len(tr.inputs)+len(keys) > maxOpenInputs {
			tr.mu.Unlock()
			s.t.h.warn.Warn(s.log, "round_full").Int("inputs", len(keys)).Msg("the input round asks for too many inputs; call failed")
			s.finishCall(origID, wire.ErrorResponse(origID, wire.CodeInternalError, "mcp-bridge: the server asked for too many inputs at once", nil))
			return true
		}
		for key, q := range keys {
			tr.next++
			id := strconv.AppendQuote(nil, translate.InternalIDPrefix+"input-"+strconv.Itoa(tr.next))
			round.keys[string(id)] = key
			tr.inputs[string(id)] = round
			var params []byte
			if len(q.Params) > 0 {
				params = q.Params
			}
			out = append(out, wire.Request(id, q.Method, translate.LegacyInputParams(q.Method, params)))
		}
		tr.mu.Unlock()
	}
	if len(round.keys) == 0 {
		// Only a request state: retry at once.
		s.retryInput(round)
		return true
	}
	for _, msg := range out {
		cl.sink.push(msg, false)
	}
	return true
}

// translatedResponse takes a client's answer to one of the bridge's
// server-to-client requests.
func (s *session) translatedResponse(m *wire.Message) {
	tr := s.tr
	tr.mu.Lock()
	round := tr.inputs[string(m.IDBytes())]
	if round == nil {
		tr.mu.Unlock()
		s.log.Debug().RawJSON("id", m.IDBytes()).Msg("response to no request of the bridge; dropped")
		return
	}
	delete(tr.inputs, string(m.IDBytes()))
	key := round.keys[string(m.IDBytes())]
	delete(round.keys, string(m.IDBytes()))
	if m.Error.Present() {
		// MRTR has no slot for a refused input: the call fails with it.
		for id := range round.keys {
			delete(tr.inputs, id)
		}
		tr.mu.Unlock()
		s.finishCall(round.origID, wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: round.origID}))
		return
	}
	round.answers[key] = clone(m.Bytes(m.Result))
	round.bytes += len(m.Bytes(m.Result))
	if round.bytes > int(s.t.h.lim.perStream) {
		// The retry carries every answer in one message to the child.
		for id := range round.keys {
			delete(tr.inputs, id)
		}
		tr.mu.Unlock()
		s.finishCall(round.origID, wire.ErrorResponse(round.origID, wire.CodeInternalError, "mcp-bridge: the answers to the input requests are too large", nil))
		return
	}
	done := len(round.keys) == 0
	tr.mu.Unlock()
	if done {
		s.retryInput(round)
	}
}

// dropRound forgets the input round of the call the client knows as
// origID, so that late answers to its requests are dropped; it reports
// whether there was one.
func (tr *translation) dropRound(origID []byte) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	found := false
	for id, round := range tr.inputs {
		if string(round.origID) == string(origID) {
			delete(tr.inputs, id)
			found = true
		}
	}
	return found
}

// retryInput re-sends the request with the collected input responses and
// the byte-identical request state, under a new id (mrtr: the retry's id
// "MUST be different").
func (s *session) retryInput(round *inputRound) {
	fields := translate.RetryFields(round.answers, round.state)
	var orig, retry wire.Message
	wire.Parse(round.request, &orig)
	if err := wire.Parse(wire.WithParamsFields(&orig, fields), &retry); err != nil {
		s.finishCall(round.origID, wire.ErrorResponse(round.origID, wire.CodeInternalError, "mcp-bridge: cannot build the retry", nil))
		return
	}
	cl := &call{method: round.method, sink: round.sink, sess: s, origID: round.origID, logLevel: retry.LogLevel != ""}
	cl.onFinal = func(resp *wire.Message) bool { return s.inputRequired(resp, round.request, round.origID, round.method) }
	cl.childID = s.t.h.ids.Add(1)
	s.replacePending(cl)
	if err := s.child().start(cl, &retry); err != nil {
		s.finishCall(round.origID, wire.ErrorResponse(round.origID, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil))
	}
}

// replacePending puts a retry's call in the place of the call it continues
// (same client id, same position in arrival order).
func (s *session) replacePending(cl *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byOrig[string(cl.origID)]; old != nil {
		if i := slices.Index(s.pending, old); i >= 0 {
			s.pending[i] = cl
		}
	}
	s.byOrig[string(cl.origID)] = cl
}

// finishCall ends a translated call with msg as its response.
func (s *session) finishCall(origID, msg []byte) {
	if cl := s.pendingCall(origID); cl != nil {
		s.settled(cl, true)
		cl.sink.push(msg, true)
	}
}

func (s *session) translatedNotify(m *wire.Message) bool {
	switch m.Method {
	case "notifications/initialized":
		// Nothing to tell a stateless child; the session's change
		// notifications start flowing now.
		s.startListen()
		return true
	case "notifications/roots/list_changed":
		return true // roots travel in input rounds in 2026-07-28
	}
	return false
}

// startListen (re)opens the session's subscriptions/listen stream at the
// child: the list_changed kinds the child advertises, and the resources
// the client subscribed to. Its notifications reach the client as the
// era's unsolicited notifications, on the GET stream.
func (s *session) startListen() {
	tr := s.tr
	c := s.sc.changeCapabilities()
	var uris []string
	tr.mu.Lock()
	if c.Subscribe {
		for u := range tr.subs {
			uris = append(uris, u)
		}
	}
	old := tr.listen
	tr.listen = nil
	tr.mu.Unlock()
	conn := s.child()
	if old != nil {
		conn.cancel(old, "subscriptions changed")
	}
	if !c.Tools && !c.Prompts && !c.Resources && len(uris) == 0 {
		return
	}
	fj := translate.AppendNotifications(nil, c.Tools, c.Prompts, c.Resources, uris)
	params := append(append(append([]byte(`{"notifications":`), fj...), `,"_meta":{`...), tr.envelope()...)
	params = append(params, "}}"...)
	var m wire.Message
	if wire.Parse(wire.Request([]byte("0"), "subscriptions/listen", params), &m) != nil {
		return
	}
	cl := &call{method: "subscriptions/listen", origID: []byte(`"listen"`)}
	cl.deliverFn = func(msg []byte, final bool) {
		var n wire.Message
		if final || wire.Parse(msg, &n) != nil || n.Kind != wire.KindNotification || n.Method == "notifications/subscriptions/acknowledged" {
			return
		}
		s.route(wire.WithoutFields(n.Raw, n.Meta, wire.MetaSubscriptionID), false)
	}
	if err := conn.start(cl, &m); err != nil {
		s.log.Warn().Err(err).Msg("cannot open the session's subscriptions/listen stream")
		return
	}
	tr.mu.Lock()
	tr.listen = cl
	tr.mu.Unlock()
}

// stop ends the session's listen stream.
func (tr *translation) stop(s *session) {
	tr.mu.Lock()
	l := tr.listen
	tr.listen = nil
	tr.mu.Unlock()
	if l != nil {
		s.child().cancel(l, "session ended")
	}
}
