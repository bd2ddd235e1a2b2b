package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// serveModern handles one 2026-07-28 POST: validate the request metadata
// headers against the body, then relay the request to the shared child and
// stream its answer back.
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, m *wire.Message) {
	id := m.IDBytes()
	sc := h.childFor(r)
	if sc == nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, id, wire.CodeInternalError, "mcp-bridge: too many principals have a child of their own (--max-principals)", nil)
		return
	}
	if m.Kind == wire.KindResponse {
		// streamable-http §Sending: "The client MUST NOT send JSON-RPC responses."
		writeError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "Invalid Request: 2026-07-28 clients do not send responses", nil)
		return
	}
	if status, code, msg, data := h.checkModern(sc, r.Header, m); status != 0 {
		writeError(w, status, id, code, msg, data)
		return
	}
	h.clients.first(h.log, h.guard.principal(r), m)
	if m.Kind == wire.KindNotification {
		// This revision defines no client notifications over HTTP
		// (cancellation is closing the stream); accept and drop them.
		h.log.Debug().Str("method", m.Method).Msg("modern notification ignored")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	translate, ok := sc.Translating(r.Context())
	if !ok {
		notReady(w, r, id, sc)
		return
	}
	conn := sc.Connection(r.Context())
	if conn == nil {
		notReady(w, r, id, sc)
		return
	}
	sk := h.newSink(1)
	cl := &child.Call{
		Method:   m.Method,
		Who:      h.guard.principal(r),
		Sink:     sk,
		LogLevel: m.LogLevel != "",
		Op:       opOf(w),
	}
	if translate {
		// A legacy child: the bridge plays the 2026-07-28 server.
		switch m.Method {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			w.Write(wire.ResultResponse(id, sc.DiscoverResult()))
			return
		case "subscriptions/listen":
			h.serveLegacyListen(w, r, m, sc, conn)
			return
		}
		if h.serveLegacyTask(w, r, m, sc, conn) {
			return
		}
		if lm, done := h.urlRetry(w, r, m, sc); done {
			return
		} else if lm != nil {
			m = lm
		}
		if state := stateOf(m); state != "" {
			h.resumeInput(w, r, m, sc, state)
			return
		}
		if m.LogLevel != "" {
			sc.SetLevel(r.Context(), conn, m.LogLevel)
		}
		cl.Complete = true
		cl.Caps = m.ClientCapabilities()
		cl.OnFinal = urlOnFinal(conn, cl) // -32042 becomes a URL input round (urlelicit.go)
		m = tasks.AugmentCall(m, sc)
		// The 2026-07-28 envelope means nothing to a legacy child (and
		// some reject what carries it): it travels without.
		stripped := wire.WithoutFields(m.Raw, m.Meta, wire.MetaProtocolVersion, wire.MetaClientCapabilities, wire.MetaClientInfo, wire.MetaLogLevel)
		var lm wire.Message
		if err := wire.Parse(stripped, &lm); err == nil {
			m = &lm
		}
	}
	if m.Method == "tools/list" {
		cl.OnFinal = func(resp *wire.Message) bool {
			if resp.Result.Present() {
				sc.Tools.Absorb(resp.Raw, resp.Result)
			}
			return false
		}
	}
	if err := conn.Start(cl, m); err != nil {
		writeError(w, http.StatusServiceUnavailable, id, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
		return
	}
	rsp := stream.NewResponder(w, true)
	rsp.MayDetach(r, m.ProgressToken.Present())
	var stop <-chan struct{}
	if m.Method == "subscriptions/listen" {
		stop = h.refusing.Done() // a listen stream lives until the replica drains
	}
	method, who := m.Method, h.guard.principal(r)
	h.streams.PumpDetachable(r, rsp, sk, stop, nil, func(res stream.PumpResult) {
		switch res {
		case stream.PumpClientGone:
			sk.Close()
			h.abandon(conn, cl, "client closed the stream")
		case stream.PumpStopped:
			sk.Close()
			h.abandon(conn, cl, "mcp-bridge is shutting down")
		}
		h.logCall(method, who, cl)
	})
}

// abandon cancels a call whose client is gone — unless the call is
// suspended for an MRTR round, in which case the retry will pick it up.
func (h *Handler) abandon(conn *child.Conn, cl *child.Call, reason string) {
	if _, _, sk := cl.Target(); sk == nil {
		return
	}
	conn.Cancel(cl, reason)
}

// Canonical forms of the request metadata headers, for direct map access
// (http.Header.Get canonicalizes its argument on every call).
var (
	keyProtocolVersion = http.CanonicalHeaderKey(wire.HeaderProtocolVersion)
	keyMethod          = http.CanonicalHeaderKey(wire.HeaderMethod)
	keyName            = http.CanonicalHeaderKey(wire.HeaderName)
	keySessionID       = http.CanonicalHeaderKey(wire.HeaderSessionID)
)

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

func (h *Handler) logCall(method string, who auth.Principal, cl *child.Call) {
	if e := h.log.Debug(); e.Enabled() {
		id, _, _ := cl.Target()
		if who != (auth.Principal{}) {
			e.Stringer("principal", who)
		}
		e.Str("method", method).RawJSON("id", id).Int64("child_id", cl.ChildID).
			Dur("took", since(cl.Started)).Msg("request done")
	}
}

// checkModern validates the request metadata headers of a 2026-07-28
// request (streamable-http §Server validation). It returns a zero status
// when the request may proceed.
func (h *Handler) checkModern(sc *child.Shared, hdr http.Header, m *wire.Message) (status, code int, msg string, data []byte) {
	mismatch := func(format string, args ...any) (int, int, string, []byte) {
		return http.StatusBadRequest, wire.CodeHeaderMismatch, "Header mismatch: " + fmt.Sprintf(format, args...), nil
	}
	pv := strings.TrimSpace(first(hdr[keyProtocolVersion]))
	switch {
	case pv == "":
		return mismatch("missing required %s header", wire.HeaderProtocolVersion)
	case pv != m.ProtocolVersion:
		// §Protocol version header: the header MUST equal the body's version.
		return mismatch("%s header value '%s' does not match body value '%s'", wire.HeaderProtocolVersion, pv, m.ProtocolVersion)
	}
	if supported := sc.Supported(); !slices.Contains(supported, m.ProtocolVersion) {
		d, _ := json.Marshal(map[string]any{"supported": supported, "requested": m.ProtocolVersion})
		return http.StatusBadRequest, wire.CodeUnsupportedVersion, "Unsupported protocol version", d
	}
	if m.Kind != wire.KindRequest {
		// Header requirements for notification POSTs are not defined by
		// this revision.
		return 0, 0, "", nil
	}
	switch mh, ok := hdr[keyMethod]; {
	case !ok || len(mh) == 0:
		return mismatch("missing required %s header", wire.HeaderMethod)
	case strings.TrimSpace(mh[0]) != m.Method: // values are case-sensitive
		return mismatch("%s header value '%s' does not match body value '%s'", wire.HeaderMethod, strings.TrimSpace(mh[0]), m.Method)
	}
	if want, needed := m.NameValue(); needed {
		raw := first(hdr[keyName])
		if raw == "" {
			return mismatch("missing required %s header", wire.HeaderName)
		}
		got, err := wire.DecodeHeaderValue(raw)
		if err != nil {
			return mismatch("%s header value is not valid", wire.HeaderName)
		}
		if got != want {
			return mismatch("%s header value '%s' does not match body value '%s'", wire.HeaderName, got, want)
		}
	}
	if m.Method == "tools/call" {
		if st, c, ms, d := h.checkParamHeaders(sc, hdr, m); st != 0 {
			return st, c, ms, d
		}
	}
	if !m.HasClientCapabilities {
		// basic §_meta: "A request missing any required field is malformed
		// ... -32602 (Invalid params). On HTTP, the response status MUST be
		// 400 Bad Request."
		return http.StatusBadRequest, wire.CodeInvalidParams, "Invalid params: missing required _meta field " + wire.MetaClientCapabilities, nil
	}
	return 0, 0, "", nil
}

// checkParamHeaders compares Mcp-Param-* headers with the tools/call
// arguments named by the tool's x-mcp-header annotations. Tools the bridge
// has not seen in a tools/list result are passed through unchecked; the
// child still validates the body itself.
func (h *Handler) checkParamHeaders(sc *child.Shared, hdr http.Header, m *wire.Message) (int, int, string, []byte) {
	bindings, ok := sc.Tools.Lookup(m.Name)
	if !ok || len(bindings) == 0 {
		return 0, 0, "", nil
	}
	var args []byte
	if m.Arguments.Present() {
		args = m.Bytes(m.Arguments)
	}
	vals, present, err := wire.ParamValues(args, bindings)
	if errors.Is(err, wire.ErrAmbiguous) {
		// An argument in two spellings: the header could be checked
		// against one while the tool reads the other.
		return http.StatusBadRequest, wire.CodeInvalidRequest, wire.Refusal(err), nil
	}
	if err != nil {
		return 0, 0, "", nil // malformed arguments: the child will say so
	}
	for i, b := range bindings {
		name := wire.HeaderParamPrefix + b.Header
		raw, has := hdr[http.CanonicalHeaderKey(name)]
		switch {
		case present[i] && !has:
			return http.StatusBadRequest, wire.CodeHeaderMismatch, "Header mismatch: missing required " + name + " header", nil
		case !present[i] && has:
			return http.StatusBadRequest, wire.CodeHeaderMismatch, "Header mismatch: " + name + " header sent but the argument is absent", nil
		case present[i]:
			got, err := wire.DecodeHeaderValue(raw[0])
			if err != nil {
				return http.StatusBadRequest, wire.CodeHeaderMismatch, "Header mismatch: " + name + " header value is not valid", nil
			}
			if !wire.SameParamValue(b.Type, got, vals[i]) {
				return http.StatusBadRequest, wire.CodeHeaderMismatch, fmt.Sprintf("Header mismatch: %s header value '%s' does not match body value '%s'", name, got, vals[i]), nil
			}
		}
	}
	return 0, 0, "", nil
}

// notReady answers a request that waited for a child still starting (or
// restarting) as long as it may: 503 with Retry-After, unless the client
// has left already.
func notReady(w http.ResponseWriter, r *http.Request, id []byte, sc *child.Shared) {
	if r.Context().Err() != nil {
		return
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, id, wire.CodeInternalError, "mcp-bridge: the MCP server is not ready: "+sc.NotReady(), nil)
}
