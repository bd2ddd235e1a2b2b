package serve

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks across eras (issue #24): a 2026-07-28 client in front of a legacy
// child, and a legacy session in front of a 2026-07-28 child. Which
// request takes which path, and the requests the bridge makes of the child
// where one era's step is two of the other's, are bridge/translate/tasks';
// this file is serve's adapter: a Front answering over HTTP, the caller's
// principal checked against the task table (tasks.go), and a Back that is
// the child connection.
//
// Requests the bridge makes itself are internal calls, which checkTasks
// does not see: the Front's Owns checks the caller owns the task first.

// writeJSON answers with one JSON-RPC message.
func writeJSON(w http.ResponseWriter, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(msg)
}

// relayError answers id with the child's error response resp.
func relayError(w http.ResponseWriter, id []byte, resp *wire.Message) {
	writeJSON(w, wire.Splice(resp.Raw, wire.Edit{Span: resp.ID, Value: id}))
}

// taskFront is an HTTP client's tasks request as tasks.Front: answered on
// w, the task ids checked against owner's bindings.
type taskFront struct {
	w     http.ResponseWriter
	id    []byte
	owner string // Principal.Key
	conn  *child.Conn
}

func (f *taskFront) Owns(id string) tasks.Ownership {
	if f.conn.OwnsTask(f.owner, id) {
		return tasks.Bound
	}
	return tasks.NotOwned
}

func (f *taskFront) Answer(raw []byte)        { writeJSON(f.w, raw) }
func (f *taskFront) Relay(resp *wire.Message) { relayError(f.w, f.id, resp) }
func (f *taskFront) Fail(err error) {
	writeError(f.w, http.StatusOK, f.id, wire.CodeInternalError, "mcp-bridge: "+err.Error(), nil)
}

// taskBack is the child as tasks.Back: the bridge's own requests as
// internal calls, for the task id the child knows, with meta (a legacy
// session's envelope) in their _meta.
type taskBack struct {
	h    *Handler
	conn *child.Conn
	meta []byte
}

func (b *taskBack) Begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return ctx, func() {}, nil
}

func (b *taskBack) Request(ctx context.Context, method, taskID string) (*wire.Message, error) {
	// The id the child knows: internal requests pass no checkTasks, which
	// translates the ids of the client's own.
	return b.conn.Request(ctx, method, tasks.Params(b.conn.InnerTask(taskID), b.meta))
}

// errStoppedWaiting: a legacy tasks/result's polling ended with the
// request or the bridge (its shutdown).
var errStoppedWaiting = errors.New("stopped waiting for the task")

func (b *taskBack) Wait(ctx context.Context, d time.Duration) error {
	if !tasks.Sleep(ctx, d, b.h.closing.Done()) {
		return errStoppedWaiting
	}
	return nil
}

// serveLegacyTask answers a 2026-07-28 client's tasks request for a task
// on a legacy child; ok is false for a request that is no tasks request.
func (h *Handler) serveLegacyTask(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *child.Shared, conn *child.Conn) bool {
	id := m.IDBytes()
	if refusal := tasks.RefuseCall(m, sc, id); refusal != nil {
		writeJSON(w, refusal)
		return true
	}
	if !tasks.ModernIntercepts(m.Method) {
		return false
	}
	f := &taskFront{w: w, id: id, owner: h.guard.principal(r).Key(), conn: conn}
	return tasks.ModernOverLegacy(r.Context(), f, &taskBack{h: h, conn: conn}, m, id)
}

// tasksAcrossEras answers the legacy session's tasks requests whose
// SEP-2663 counterpart differs in shape; false for the others (tasks/get
// is forwarded and its result reshaped by taskAcrossEras).
func (s *session) tasksAcrossEras(w http.ResponseWriter, r *http.Request, m *wire.Message) bool {
	if !tasks.LegacyIntercepts(m.Method) {
		return false
	}
	conn := s.child()
	id := m.IDBytes()
	f := &taskFront{w: w, id: id, owner: s.owner.Key(), conn: conn}
	return tasks.LegacyOverModern(r.Context(), f, &taskBack{h: s.t.h, conn: conn, meta: s.tr.EnvelopeFields(nil)}, m, id)
}
