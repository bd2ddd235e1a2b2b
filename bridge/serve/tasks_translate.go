package serve

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks across eras (issue #24): a 2026-07-28 client in front of a legacy
// child, and a legacy session in front of a 2026-07-28 child. The mapping
// is bridge/translate's (tasks.go); this file is serve's adapter — which
// request takes which path, and the requests the bridge makes of the child
// where one era's step is two of the other's (a SEP-2663 tasks/get of a
// finished task is a legacy tasks/get plus tasks/result; a legacy
// tasks/cancel answers with the task, SEP-2663's with an ack).
//
// Requests the bridge makes itself are internal calls, which checkTasks
// does not see: each path checks the caller owns the task first.

// taskAcrossEras gives a child's response the shape of the client's era,
// for the calls that cross eras (see onResponse).
func (c *childConn) taskAcrossEras(cl *call, m *wire.Message) *wire.Message {
	if !m.Result.Present() {
		return m
	}
	res := m.Bytes(m.Result)
	var out []byte
	switch {
	case cl.complete && cl.method == "tools/call":
		// A modern client's call the bridge made a task at the legacy
		// child (augmentForLegacy).
		out, _ = translate.CreateTaskToModern(res)
	case cl.sess == nil || cl.sess.tr == nil:
	case cl.method == "tools/call":
		out, _ = translate.CreateTaskToLegacy(res)
	case cl.method == "tasks/get":
		out, _ = translate.TaskToLegacy(res)
	case cl.method == "tools/list" && childOffersTasks(cl.sess.sc.discoverResult()):
		out = translate.ToolsWithTaskSupport(res)
	}
	if out == nil {
		return m
	}
	var nm wire.Message
	if wire.Parse(wire.Splice(m.Raw, wire.Edit{Span: m.Result, Value: out}), &nm) != nil {
		return m
	}
	return &nm
}

// childOffersTasks reports whether a DiscoverResult declares the Tasks
// extension.
func childOffersTasks(discover []byte) bool {
	var m wire.Message
	if wire.Parse(wire.ResultResponse([]byte("0"), discover), &m) != nil {
		return false
	}
	caps, ok := wire.Field(m.Raw, m.Result, "capabilities")
	return ok && translate.ModernTasks(m.Bytes(caps))
}

// augmentForLegacy prepares a 2026-07-28 client's tools/call for a legacy
// child: a `task` member the client sent is dropped (SEP-2663: servers
// "MUST ignore it"), and the bridge adds one when the client declared the
// extension and the tool may run as a task (translate.Augment).
func (sc *sharedChild) augmentForLegacy(m *wire.Message) *wire.Message {
	if m.Method != "tools/call" {
		return m
	}
	support, _ := sc.tools.taskSupport(m.Name)
	return translate.AugmentCall(m, childOffersTasks(sc.discoverResult()) && translate.Augment(translate.ClientDeclaresTasks(m), support))
}

func (t *toolCache) taskSupport(name string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.support[name]
	return s, ok
}

// childTaskID is the id the child knows for the task the client knows as
// id (tasks.go: internal requests pass no checkTasks, which translates the
// ids of the client's own).
func (c *childConn) childTaskID(id string) string {
	inner, ok := strings.CutPrefix(id, c.tasks.idPrefix())
	if !ok {
		return ""
	}
	return inner
}

func taskParams(id string, meta []byte) []byte {
	p := wire.AppendString([]byte(`{"taskId":`), id)
	if meta != nil {
		p = append(append(append(p, `,"_meta":{`...), meta...), '}')
	}
	return append(p, '}')
}

// writeJSON answers with one JSON-RPC message.
func writeJSON(w http.ResponseWriter, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(msg)
}

// relayError answers id with the child's error response resp.
func relayError(w http.ResponseWriter, id []byte, resp *wire.Message) {
	writeJSON(w, wire.Splice(resp.Raw, wire.Edit{Span: resp.ID, Value: id}))
}

// serveLegacyTask answers a 2026-07-28 client's tasks request for a task
// on a legacy child; ok is false for a request that is no tasks request.
func (h *Handler) serveLegacyTask(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *sharedChild, conn *childConn) bool {
	id := m.IDBytes()
	switch m.Method {
	case "tools/call":
		support, _ := sc.tools.taskSupport(m.Name)
		if childOffersTasks(sc.discoverResult()) && translate.NeedsTasks(translate.ClientDeclaresTasks(m), support) {
			writeJSON(w, translate.MissingTasks(id))
			return true
		}
		return false
	case "tasks/result", "tasks/list":
		// SEP-2663: "tasks/result is removed; clients calling it MUST
		// receive -32601"; there is no tasks/list.
		writeError(w, http.StatusOK, id, wire.CodeMethodNotFound, "Method not found", nil)
		return true
	case "tasks/get", "tasks/cancel", "tasks/update":
	default:
		return false
	}
	if !conn.tasks.owns(h.guard.principal(r).Key(), m.TaskID) {
		writeError(w, http.StatusOK, id, wire.CodeInvalidParams, errTaskNotFound, nil)
		return true
	}
	ctx := r.Context()
	params := taskParams(conn.childTaskID(m.TaskID), nil)
	switch m.Method {
	case "tasks/update":
		// The bridge never reports input_required to a modern client
		// (translate.TaskToModern), so nothing is outstanding: "A server
		// SHOULD ignore any inputResponses responses mapped to a key that
		// is not currently outstanding".
		writeJSON(w, wire.ResultResponse(id, translate.Ack))
	case "tasks/cancel":
		resp, err := conn.request(ctx, "tasks/cancel", params)
		switch {
		case err != nil:
			writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
		case resp.Error.Present():
			relayError(w, id, resp)
		default:
			writeJSON(w, wire.ResultResponse(id, translate.Ack))
		}
	case "tasks/get":
		resp, err := conn.request(ctx, "tasks/get", params)
		if err != nil {
			writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
			return true
		}
		if !resp.Result.Present() {
			relayError(w, id, resp)
			return true
		}
		status := translate.TaskStatus(resp.Bytes(resp.Result))
		var final *wire.Message
		switch {
		case translate.NeedsFinal(status):
			// Terminal: tasks/result answers at once.
			final, _ = conn.request(ctx, "tasks/result", params)
		case status == "input_required":
			// Reported failed (translate.ErrInputAcrossEras): the task
			// must not go on waiting for an answer at the child.
			conn.request(ctx, "tasks/cancel", params)
		}
		out, ok := translate.TaskToModern(resp.Bytes(resp.Result), final)
		if !ok {
			writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: the server's tasks/get result is no task", nil)
			return true
		}
		writeJSON(w, wire.ResultResponse(id, out))
	}
	return true
}

// tasksAcrossEras answers the legacy session's tasks requests whose
// SEP-2663 counterpart differs in shape; false for the others (tasks/get
// is forwarded and its result reshaped by taskAcrossEras).
func (s *session) tasksAcrossEras(w http.ResponseWriter, r *http.Request, m *wire.Message) bool {
	id := m.IDBytes()
	switch m.Method {
	case "tasks/list":
		// The extension has none; the session was offered no tasks.list.
		writeError(w, http.StatusOK, id, wire.CodeMethodNotFound, "Method not found", nil)
		return true
	case "tasks/cancel", "tasks/result":
	default:
		return false
	}
	conn := s.child()
	if !conn.tasks.owns(s.owner.Key(), m.TaskID) {
		writeError(w, http.StatusOK, id, wire.CodeInvalidParams, errTaskNotFound, nil)
		return true
	}
	params := taskParams(conn.childTaskID(m.TaskID), s.tr.EnvelopeFields(nil))
	ctx := r.Context()
	if m.Method == "tasks/cancel" {
		// 2025-11-25 answers with the task; SEP-2663 with an ack, so the
		// task is read back.
		resp, err := conn.request(ctx, "tasks/cancel", params)
		if err == nil && resp.Result.Present() {
			resp, err = conn.request(ctx, "tasks/get", params)
		}
		s.writeTask(w, id, resp, err, func(res []byte) ([]byte, bool) { return translate.TaskToLegacy(res) })
		return true
	}
	// tasks/result blocks until the task is terminal: the bridge polls.
	for {
		resp, err := conn.request(ctx, "tasks/get", params)
		if err != nil || !resp.Result.Present() {
			s.writeTask(w, id, resp, err, nil)
			return true
		}
		res := resp.Bytes(resp.Result)
		if result, errObj, done := translate.Outcome(res, m.TaskID); done {
			if errObj != nil {
				// The underlying call's JSON-RPC error, as is.
				writeJSON(w, append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"error":`...), errObj...), '}'))
			} else {
				writeJSON(w, wire.ResultResponse(id, result))
			}
			return true
		}
		if translate.TaskStatus(res) == "input_required" {
			conn.request(ctx, "tasks/cancel", params)
			writeError(w, http.StatusOK, id, wire.CodeInternalError, translate.ErrInputAcrossEras, nil)
			return true
		}
		if !s.t.h.pollWait(ctx, translate.PollInterval(resp)) {
			writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: stopped waiting for the task", nil)
			return true
		}
	}
}

// writeTask answers id with a tasks result reshaped by shape, or the
// child's error.
func (s *session) writeTask(w http.ResponseWriter, id []byte, resp *wire.Message, err error, shape func([]byte) ([]byte, bool)) {
	switch {
	case err != nil:
		writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
	case !resp.Result.Present() || shape == nil:
		relayError(w, id, resp)
	default:
		out, ok := shape(resp.Bytes(resp.Result))
		if !ok {
			writeError(w, http.StatusOK, id, wire.CodeInternalError, "mcp-bridge: the server's answer is no task", nil)
			return
		}
		writeJSON(w, wire.ResultResponse(id, out))
	}
}

// pollWait waits d, or until ctx ends or the bridge shuts down (false).
func (h *Handler) pollWait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-h.closing.Done():
		return false
	}
}
