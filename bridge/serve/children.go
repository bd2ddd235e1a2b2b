package serve

import (
	"errors"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// The children and their connections are bridge/child's. This file is
// where the Handler meets them: the Env it gives them, which child serves
// a request, and the HTTP ends of what the child side runs (an input
// round's retry, a listen stream before a legacy child, the shared legacy
// child's initialize).

// ChildProtocol pins the era of the child, or lets the bridge detect it.
type ChildProtocol = child.Protocol

const (
	ChildAuto   = child.Auto
	ChildModern = child.Modern // 2026-07-28 only
	ChildLegacy = child.Legacy // the 2025 handshake only
)

// ModernVersion is the 2026-07-28 protocol revision, the one stateless
// clients send in every request's _meta.
const ModernVersion = translate.Modern

// childEnv is what the children take from the Handler and its Config.
func (h *Handler) childEnv() *child.Env {
	cfg := &h.cfg
	return &child.Env{
		Log:            h.log,
		Warn:           h.warn,
		Lim:            h.lim,
		Tel:            h.tel,
		Crash:          &stdiohost.CrashWatch{Logger: h.log},
		Life:           &h.life,
		Closing:        h.closing.Done(),
		Launch:         h.launch,
		Protocol:       cfg.ChildProtocol,
		PerPrincipal:   cfg.perPrincipal(),
		MaxPrincipals:  cfg.maxPrincipals(),
		WarmChildren:   cfg.WarmChildren,
		ToolFilter:     cfg.ToolFilter,
		ReplicaID:      cfg.ReplicaID,
		StartTimeout:   cfg.startTimeout(),
		RestartBackoff: cfg.RestartBackoff,
		MaxMessageSize: cfg.MaxMessageSize,
		TerminateDelay: cfg.TerminateDelay,
		WriteTimeout:   cfg.childWriteTimeout(),
	}
}

// childFor returns the shared child that serves r's modern requests, or
// nil when r's principal would need a child past Config.MaxPrincipals.
func (h *Handler) childFor(r *http.Request) *child.Shared {
	if !h.cfg.perPrincipal() {
		return h.shared
	}
	return h.principals.Get(h.guard.principal(r))
}

// resumeInput handles a modern client's MRTR retry of a call the bridge
// suspended: its input responses answer the child's requests, and the
// retry's stream takes over the call (which may ask again).
func (h *Handler) resumeInput(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *child.Shared, state string) {
	sk := h.newSink(1)
	ok, abandon := sc.Retry(state, m, sk)
	if !ok {
		writeError(w, http.StatusBadRequest, m.IDBytes(), wire.CodeInvalidParams, translate.ExpiredState, nil)
		return
	}
	rsp := stream.NewResponder(w, true)
	switch h.streams.Pump(r.Context(), rsp, sk, nil, nil) {
	case stream.PumpClientGone:
		sk.Close()
		if abandon != nil {
			abandon("client closed the stream")
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

// serveLegacyListen answers a modern subscriptions/listen in front of a
// legacy child, until the client closes the stream or the bridge shuts
// down.
func (h *Handler) serveLegacyListen(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *child.Shared, conn *child.Conn) {
	sk := h.newSink(1)
	// A listen stream the bridge serves itself is no call at the child, but
	// it is a request in flight like one (--max-inflight).
	h.lim.Started()
	defer h.lim.Ended(1)
	l := sc.Listen.Open(r.Context(), sc.ListenBack(conn), m, clone(m.IDBytes()), func(msg []byte) { sk.Push(msg, false) })
	defer func() {
		sc.Listen.Close(l)
		sk.Close()
	}()
	rsp := stream.NewResponder(w, true)
	if h.streams.Pump(r.Context(), rsp, sk, h.refusing.Done(), nil) == stream.PumpStopped {
		rsp.Event(l.Closing())
	}
}

// initializeShared answers a session's initialize from the shared legacy
// child (SessionShared), which the first one starts.
func (t *sessionTable) initializeShared(w http.ResponseWriter, r *http.Request, m *wire.Message, s *session) {
	conn, result, version, err := t.shared.Initialize(r.Context(), m)
	if err != nil {
		if !errors.Is(err, child.ErrNotInitialized) {
			w.Header().Set("Retry-After", "1") // come back after the child's backoff
		}
		writeError(w, http.StatusServiceUnavailable, m.IDBytes(), wire.CodeInternalError, err.Error(), nil)
		return
	}
	s.conn = conn
	s.version = version
	t.add(s)
	s.logStarted(initializeClient(m))
	w.Header().Set(wire.HeaderSessionID, s.id)
	w.Header().Set("Content-Type", "application/json")
	w.Write(wire.ResultResponse(m.IDBytes(), result))
}

// childSessions returns every session as the shared legacy child sees
// them.
func (t *sessionTable) childSessions() []child.Session {
	all := t.all()
	out := make([]child.Session, len(all))
	for i, s := range all {
		out[i] = s
	}
	return out
}

// relayResponse hands a client's response to a server-to-client request
// to the session's child. ok is false when the child is shared and the
// response answers no request delivered to this session.
func (s *session) relayResponse(m *wire.Message) (ok bool, err error) {
	if l := s.t.shared; l != nil {
		return l.Answer(s, m)
	}
	// The session's own child: its ids were never rewritten.
	c := s.child()
	return true, c.Send(c.InternalAnswer(clone(m.Raw))) // task ids: child/tasks.go
}

// Route, OwnerKey and Busy make a session a child.Session (with Settled).
func (s *session) Route(m *wire.Message, related bool, edits ...wire.Edit) {
	s.routeParsed(m, related, edits...)
}

func (s *session) OwnerKey() string { return s.owner.Key() }

func (s *session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
