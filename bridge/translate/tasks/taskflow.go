// Package tasks carries tasks across the eras (issue #24), once for both
// faces: a 2026-07-28 front (client or host) in front of a legacy back
// (child or remote), and a legacy front in front of a 2026-07-28 back.
// The mapping of one task object into the other era is bridge/translate's
// (tasks.go); this package holds what is stateful about it — which request
// takes which path, and the requests the bridge makes of the back where
// one era's step is two of the other's (a SEP-2663 tasks/get of a finished
// task is a legacy tasks/get plus tasks/result; a legacy tasks/cancel
// answers with the task, SEP-2663's with an ack; a legacy tasks/result
// waits for the task, SEP-2663 polls) — and the table binding a shared
// back's tasks to the principals that created them (tasktable.go).
//
// serve and connect are adapters: a Front (how the caller is answered and
// whether it may act on a task) and a Back (how a request of the bridge's
// own reaches the child or the remote).
package tasks

import (
	"context"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Ownership is what a Front knows of the caller's right to a task.
type Ownership int

const (
	// NotOwned: not the caller's task (or none at all); answered as a
	// missing task, the back never asked.
	NotOwned Ownership = iota
	// Bound: the bridge saw the caller create the task (serve's table).
	Bound
	// Unchecked: the front keeps no table (connect has one host); the
	// back answers for the task.
	Unchecked
)

// Front is the face a tasks request came in on.
type Front interface {
	// Owns says whether the caller may act on task id (as the caller
	// knows it). Requests the bridge makes of the back are its own, which
	// no check downstream sees: the caller's right is checked here first.
	Owns(taskID string) Ownership
	// Answer sends the caller the response raw (the caller's id in it).
	Answer(raw []byte)
	// Relay answers with the back's error response resp, the caller's id
	// in place of the back's.
	Relay(resp *wire.Message)
	// Fail answers with err: a request to the back got no answer.
	Fail(err error)
}

// Back is the peer behind the bridge, as the bridge's own requests see it.
type Back interface {
	// Begin readies the back for one exchange (a session, a discovery)
	// and bounds it: the context its requests run in, and its end.
	Begin(ctx context.Context) (context.Context, context.CancelFunc, error)
	// Request sends the bridge's own request method for task id (as the
	// caller knows it) and returns the back's response.
	Request(ctx context.Context, method, taskID string) (*wire.Message, error)
	// Wait waits d between two polls; an error ends the polling (and is
	// the caller's answer).
	Wait(ctx context.Context, d time.Duration) error
}

// Tools is what the bridge knows of a legacy back's tools.
type Tools interface {
	// TaskSupport is tool's execution.taskSupport at the legacy back; ""
	// when the back offers no tasks the bridge translates.
	TaskSupport(tool string) string
}

// ErrTaskNotFound is what a request for a task not bound to its principal
// gets (2025-11-25 tasks §Protocol Errors), with -32602.
const ErrTaskNotFound = "Task not found"

// ModernIntercepts reports whether a 2026-07-28 front's request of method
// is answered by ModernOverLegacy: a cheap test, so that a face builds its
// Front and Back for those alone, not for every message.
func ModernIntercepts(method string) bool {
	switch method {
	case "tasks/result", "tasks/list", "tasks/get", "tasks/cancel", "tasks/update":
		return true
	}
	return false
}

// RefuseCall is the answer to a 2026-07-28 front's request m (id: the
// caller's id) that a legacy back cannot take: a tools/call of a tool that
// runs only as a task, from a front that did not declare the extension
// (translate.NeedsTasks). nil for any other request, which goes on.
func RefuseCall(m *wire.Message, t Tools, id []byte) []byte {
	if m.Method != "tools/call" {
		return nil
	}
	// The front's capabilities are read only for a task-only tool: a
	// call costs no extra decoding where the back offers no tasks.
	if support := t.TaskSupport(m.Name); support != "required" || !translate.NeedsTasks(translate.ClientDeclaresTasks(m), support) {
		return nil
	}
	return translate.MissingTasks(id)
}

// LegacyIntercepts is ModernIntercepts for LegacyOverModern.
func LegacyIntercepts(method string) bool {
	switch method {
	case "tasks/list", "tasks/cancel", "tasks/result":
		return true
	}
	return false
}

// ModernOverLegacy answers a 2026-07-28 front's tasks request m (id: the
// caller's id) for a task on a legacy back; false for a request that is no
// tasks request (ModernIntercepts), which goes on as any other.
func ModernOverLegacy(ctx context.Context, f Front, b Back, m *wire.Message, id []byte) bool {
	switch m.Method {
	case "tasks/result", "tasks/list":
		// SEP-2663: "tasks/result is removed; clients calling it MUST
		// receive -32601"; there is no tasks/list.
		f.Answer(wire.ErrorResponse(id, wire.CodeMethodNotFound, "Method not found", nil))
		return true
	case "tasks/get", "tasks/cancel", "tasks/update":
	default:
		return false
	}
	own, ctx, done := enter(ctx, f, b, m, id)
	if done == nil {
		return true
	}
	defer done()
	switch m.Method {
	case "tasks/update", "tasks/cancel":
		// tasks/update: the bridge never reports input_required to a
		// modern client (translate.TaskToModern), so nothing is
		// outstanding: "A server SHOULD ignore any inputResponses
		// responses mapped to a key that is not currently outstanding".
		// The task must exist, though: a task the bridge saw created
		// (Bound) does; of any other the back is asked tasks/get.
		// tasks/cancel is the back's own; either answers with an ack.
		method := m.Method
		if method == "tasks/update" {
			if own == Bound {
				f.Answer(wire.ResultResponse(id, translate.Ack))
				return true
			}
			method = "tasks/get"
		}
		resp, err := b.Request(ctx, method, m.TaskID)
		switch {
		case err != nil:
			f.Fail(err)
		case !resp.Result.Present():
			f.Relay(resp)
		default:
			f.Answer(wire.ResultResponse(id, translate.Ack))
		}
	case "tasks/get":
		resp, err := b.Request(ctx, "tasks/get", m.TaskID)
		if err != nil {
			f.Fail(err)
			return true
		}
		if !resp.Result.Present() {
			f.Relay(resp)
			return true
		}
		status := translate.TaskStatus(resp.Bytes(resp.Result))
		var final *wire.Message
		switch {
		case translate.NeedsFinal(status):
			// Terminal: tasks/result answers at once.
			final, _ = b.Request(ctx, "tasks/result", m.TaskID)
		case status == "input_required":
			// Reported failed (translate.ErrInputAcrossEras): the task
			// must not go on waiting for an answer at the back.
			b.Request(ctx, "tasks/cancel", m.TaskID)
		}
		out, ok := translate.TaskToModern(resp.Bytes(resp.Result), final)
		if !ok {
			f.Answer(wire.ErrorResponse(id, wire.CodeInternalError, "mcp-bridge: the server's tasks/get result is no task", nil))
			return true
		}
		f.Answer(wire.ResultResponse(id, out))
	}
	return true
}

// LegacyOverModern answers a legacy front's tasks requests whose SEP-2663
// counterpart differs in shape; false for the others (tasks/get is
// forwarded, and its result reshaped by ResultToLegacy).
func LegacyOverModern(ctx context.Context, f Front, b Back, m *wire.Message, id []byte) bool {
	switch m.Method {
	case "tasks/list":
		// The extension has none; the front was offered no tasks.list.
		f.Answer(wire.ErrorResponse(id, wire.CodeMethodNotFound, "Method not found", nil))
		return true
	case "tasks/cancel", "tasks/result":
	default:
		return false
	}
	_, ctx, done := enter(ctx, f, b, m, id)
	if done == nil {
		return true
	}
	defer done()
	if m.Method == "tasks/cancel" {
		// 2025-11-25 answers with the task; SEP-2663 with an ack, so the
		// task is read back.
		resp, err := b.Request(ctx, "tasks/cancel", m.TaskID)
		if err == nil && resp.Result.Present() {
			resp, err = b.Request(ctx, "tasks/get", m.TaskID)
		}
		answerTask(f, id, resp, err, true)
		return true
	}
	// tasks/result "MUST block the response until the task reaches a
	// terminal status": the bridge polls.
	for {
		resp, err := b.Request(ctx, "tasks/get", m.TaskID)
		if err != nil || !resp.Result.Present() {
			answerTask(f, id, resp, err, false)
			return true
		}
		res := resp.Bytes(resp.Result)
		if result, errObj, done := translate.Outcome(res, m.TaskID); done {
			if errObj != nil {
				// The underlying call's JSON-RPC error, as is.
				f.Answer(append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"error":`...), errObj...), '}'))
			} else {
				f.Answer(wire.ResultResponse(id, result))
			}
			return true
		}
		if translate.TaskStatus(res) == "input_required" {
			b.Request(ctx, "tasks/cancel", m.TaskID)
			f.Answer(wire.ErrorResponse(id, wire.CodeInternalError, translate.ErrInputAcrossEras, nil))
			return true
		}
		if err := b.Wait(ctx, translate.PollInterval(resp)); err != nil {
			f.Fail(err)
			return true
		}
	}
}

// answerTask answers with the back's tasks response: its error as is, or
// its task in 2025-11-25 form (asTask).
func answerTask(f Front, id []byte, resp *wire.Message, err error, asTask bool) {
	switch {
	case err != nil:
		f.Fail(err)
	case !resp.Result.Present() || !asTask:
		f.Relay(resp)
	default:
		out, ok := translate.TaskToLegacy(resp.Bytes(resp.Result))
		if !ok {
			f.Answer(wire.ErrorResponse(id, wire.CodeInternalError, "mcp-bridge: the server's answer is no task", nil))
			return
		}
		f.Answer(wire.ResultResponse(id, out))
	}
}

// Params is the params of the bridge's own request for task id (as the
// back knows it), with meta (the members of a _meta object; nil: none).
func Params(id string, meta []byte) []byte {
	p := wire.AppendString([]byte(`{"taskId":`), id)
	if meta != nil {
		p = append(append(append(p, `,"_meta":{`...), meta...), '}')
	}
	return append(p, '}')
}

// Sleep waits d between two polls of a task: true once d passed, false
// when ctx ends or stop (nil: never) closes first.
func Sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// enter is the start of every tasks request the bridge answers itself:
// the caller must own the task (the receiver "MUST" bind tasks to the
// authorization context), then the back is opened. A nil done means the
// front has been answered already.
func enter(ctx context.Context, f Front, b Back, m *wire.Message, id []byte) (Ownership, context.Context, context.CancelFunc) {
	own := f.Owns(m.TaskID)
	if own == NotOwned {
		f.Answer(wire.ErrorResponse(id, wire.CodeInvalidParams, ErrTaskNotFound, nil))
		return own, ctx, nil
	}
	ctx, done, err := b.Begin(ctx)
	if err != nil {
		f.Fail(err)
		return own, ctx, nil
	}
	return own, ctx, done
}
