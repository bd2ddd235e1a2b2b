package connect

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks across eras (issue #24): a 2025-11-25 host on a 2026-07-28 remote
// (legacyHost) and a 2026-07-28 host on a 2025 remote (modernHost). The
// mapping is bridge/translate's (tasks.go), the same serve uses; this file
// is connect's adapter: which request takes which path, and the requests
// the bridge makes of the remote where one era's step is two of the
// other's (a SEP-2663 tasks/get of a finished task is a legacy tasks/get
// plus tasks/result; a legacy tasks/cancel answers with the task, SEP-2663's
// with an ack; a legacy tasks/result waits for the task, SEP-2663 polls).

// withResult returns fm with its result replaced by result (nil: fm).
func withResult(fm *wire.Message, result []byte) *wire.Message {
	if result == nil {
		return fm
	}
	var nm wire.Message
	if wire.Parse(wire.Splice(fm.Raw, wire.Edit{Span: fm.Result, Value: result}), &nm) != nil {
		return fm
	}
	return &nm
}

// resultField returns a top-level member of a response's result.
func resultField(resp []byte, key string) []byte {
	var m wire.Message
	if wire.Parse(resp, &m) != nil || !m.Result.Present() {
		return nil
	}
	sp, ok := wire.Field(m.Raw, m.Result, key)
	if !ok {
		return nil
	}
	return m.Bytes(sp)
}

// taskShape gives the remote's (2026-07-28) response to a legacy host's
// request of method the host's era: a task as 2025-11-25 writes it, and
// tools a legacy host may call as tasks.
func (h *legacyHost) taskShape(method string, fm *wire.Message) *wire.Message {
	if !fm.Result.Present() {
		return fm
	}
	var out []byte
	switch method {
	case "tools/call":
		out, _ = translate.CreateTaskToLegacy(fm.Bytes(fm.Result))
	case "tasks/get":
		out, _ = translate.TaskToLegacy(fm.Bytes(fm.Result))
	case "tools/list":
		if h.s.OffersTasks() {
			out = translate.ToolsWithTaskSupport(fm.Bytes(fm.Result))
		}
	}
	return withResult(fm, out)
}

// roundTrip sends a request of the bridge's own to the modern remote, in
// the host's envelope (its headers derived from it, Mcp-Name = taskId for
// the tasks methods), and returns the response to it.
func (h *legacyHost) roundTrip(ctx context.Context, method string, params []byte) (*wire.Message, error) {
	b := h.b
	id := b.mintID("task")
	var m wire.Message
	if err := wire.Parse(wire.Request(id, method, params), &m); err != nil {
		return nil, err
	}
	body, err := h.envelope(&m)
	if err != nil {
		return nil, err
	}
	if err := wire.Parse(body, &m); err != nil {
		return nil, err
	}
	resp, err := b.client.Post(ctx, m.Raw, b.headersFor(&m))
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	r, err := awaitResponse(resp, id, nil)
	if err != nil {
		return nil, fmt.Errorf("no answer to %s: %w", method, err)
	}
	out := *r
	out.Raw = clone(r.Raw)
	return &out, nil
}

// task answers the legacy host's tasks requests whose SEP-2663 counterpart
// differs in shape; false for the others (tasks/get is forwarded, and its
// result reshaped by taskShape).
func (h *legacyHost) task(ctx context.Context, p *pending, m *wire.Message) bool {
	b := h.b
	switch m.Method {
	case "tasks/list":
		// The extension has none; the host was offered no tasks.list.
		b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeMethodNotFound, "Method not found", nil))
		return true
	case "tasks/cancel", "tasks/result":
	default:
		return false
	}
	if err := h.ensureDiscovered(ctx); err != nil {
		b.answerError(p, err)
		return true
	}
	ctx, cancel := b.requestCtx(ctx)
	defer cancel()
	params := wire.AppendString([]byte(`{"taskId":`), m.TaskID)
	params = append(params, '}')
	if m.Method == "tasks/cancel" {
		// 2025-11-25 answers with the task; SEP-2663 with an ack, so the
		// task is read back.
		resp, err := h.roundTrip(ctx, "tasks/cancel", params)
		if err == nil && resp.Result.Present() {
			resp, err = h.roundTrip(ctx, "tasks/get", params)
		}
		h.answerTask(p, resp, err, true)
		return true
	}
	// tasks/result "MUST block the response until the task reaches a
	// terminal status": the bridge polls.
	for {
		resp, err := h.roundTrip(ctx, "tasks/get", params)
		if err != nil || !resp.Result.Present() {
			h.answerTask(p, resp, err, false)
			return true
		}
		res := resp.Bytes(resp.Result)
		if result, errObj, done := translate.Outcome(res, m.TaskID); done {
			if errObj != nil {
				// The underlying call's JSON-RPC error, as is.
				b.writeFinal(p, append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), p.id...), `,"error":`...), errObj...), '}'))
			} else {
				b.writeFinal(p, wire.ResultResponse(p.id, result))
			}
			return true
		}
		if translate.TaskStatus(res) == "input_required" {
			h.roundTrip(ctx, "tasks/cancel", params)
			b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInternalError, translate.ErrInputAcrossEras, nil))
			return true
		}
		t := time.NewTimer(translate.PollInterval(resp))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			b.answerError(p, ctx.Err())
			return true
		}
	}
}

// answerTask answers p with the remote's tasks response: its error as is,
// or its task in 2025-11-25 form (asTask).
func (h *legacyHost) answerTask(p *pending, resp *wire.Message, err error, asTask bool) {
	b := h.b
	switch {
	case err != nil:
		b.answerError(p, err)
	case !resp.Result.Present() || !asTask:
		b.writeFinal(p, b.hostID(p, resp.Raw))
	default:
		out, ok := translate.TaskToLegacy(resp.Bytes(resp.Result))
		if !ok {
			b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInternalError, "mcp-bridge: the remote's answer is no task", nil))
			return
		}
		b.writeFinal(p, wire.ResultResponse(p.id, out))
	}
}

// remoteOffersTasks reports whether the legacy remote's InitializeResult
// offers tasks the bridge translates.
func (h *modernHost) remoteOffersTasks() bool {
	h.initMu.Lock()
	init := h.result
	h.initMu.Unlock()
	return translate.LegacyServerTasks(resultField(init, "capabilities"))
}

// augment prepares a 2026-07-28 host's tools/call for the legacy remote: a
// `task` member the host sent is dropped (SEP-2663: servers "MUST ignore
// it"), and the bridge adds one when the host declared the extension and
// the tool may run as a task (translate.Augment).
func (h *modernHost) augment(m *wire.Message) *wire.Message {
	if m.Method != "tools/call" {
		return m
	}
	return translate.AugmentCall(m, h.remoteOffersTasks() && translate.Augment(translate.ClientDeclaresTasks(m), h.b.tools.taskSupport(m.Name)))
}

// taskShape gives the legacy remote's response to a modern host's request
// of method the host's era (a CreateTaskResult as SEP-2663 writes it), and
// learns the tools' taskSupport from tools/list.
func (h *modernHost) taskShape(method string, fm *wire.Message) *wire.Message {
	if !fm.Result.Present() {
		return fm
	}
	switch method {
	case "tools/list":
		h.b.tools.noteTaskSupport(fm)
	case "tools/call":
		out, _ := translate.CreateTaskToModern(fm.Bytes(fm.Result))
		return withResult(fm, out)
	}
	return fm
}

// task answers a 2026-07-28 host's tasks request for a task on the legacy
// remote; false for a request that is no tasks request.
func (h *modernHost) task(ctx context.Context, p *pending, m *wire.Message) bool {
	b := h.b
	switch m.Method {
	case "tools/call":
		if h.remoteOffersTasks() && translate.NeedsTasks(translate.ClientDeclaresTasks(m), b.tools.taskSupport(m.Name)) {
			b.writeFinal(p, translate.MissingTasks(p.id))
			return true
		}
		return false
	case "tasks/result", "tasks/list":
		// SEP-2663: "tasks/result is removed; clients calling it MUST
		// receive -32601"; there is no tasks/list.
		b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeMethodNotFound, "Method not found", nil))
		return true
	case "tasks/get", "tasks/cancel", "tasks/update":
	default:
		return false
	}
	if err := h.ensureSession(ctx, m); err != nil {
		b.answerError(p, err)
		return true
	}
	ctx, cancel := b.requestCtx(ctx)
	defer cancel()
	params := append(wire.AppendString([]byte(`{"taskId":`), m.TaskID), '}')
	ask := func(method string) (*wire.Message, error) {
		var rm wire.Message
		if err := wire.Parse(wire.Request(b.mintID("task"), method, params), &rm); err != nil {
			return nil, err
		}
		return h.roundTrip(ctx, &rm)
	}
	switch m.Method {
	case "tasks/update", "tasks/cancel":
		// tasks/update: the bridge never reports input_required to a
		// modern host (translate.TaskToModern): nothing is outstanding,
		// and "A server SHOULD ignore any inputResponses responses mapped
		// to a key that is not currently outstanding". The task must
		// exist, though: the remote is asked tasks/get. tasks/cancel is
		// the remote's own; either answers the host with an ack.
		method := "tasks/get"
		if m.Method == "tasks/cancel" {
			method = "tasks/cancel"
		}
		resp, err := ask(method)
		switch {
		case err != nil:
			b.answerError(p, err)
		case !resp.Result.Present():
			b.writeFinal(p, b.hostID(p, resp.Raw))
		default:
			b.writeFinal(p, wire.ResultResponse(p.id, translate.Ack))
		}
	case "tasks/get":
		resp, err := ask("tasks/get")
		if err != nil {
			b.answerError(p, err)
			return true
		}
		if !resp.Result.Present() {
			b.writeFinal(p, b.hostID(p, resp.Raw))
			return true
		}
		status := translate.TaskStatus(resp.Bytes(resp.Result))
		var final *wire.Message
		switch {
		case translate.NeedsFinal(status):
			final, _ = ask("tasks/result") // terminal: answers at once
		case status == "input_required":
			ask("tasks/cancel") // reported failed (translate.ErrInputAcrossEras)
		}
		out, ok := translate.TaskToModern(resp.Bytes(resp.Result), final)
		if !ok {
			b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInternalError, "mcp-bridge: the remote's tasks/get result is no task", nil))
			return true
		}
		b.writeFinal(p, wire.ResultResponse(p.id, out))
	}
	return true
}

// noteTaskSupport records the execution.taskSupport of the tools of a
// legacy remote's tools/list result.
func (t *toolCache) noteTaskSupport(m *wire.Message) {
	tools, ok := wire.Field(m.Raw, m.Result, "tools")
	if !ok {
		return
	}
	elems, err := wire.Elements(m.Raw, tools)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.support == nil {
		t.support = map[string]string{}
	}
	for _, e := range elems {
		name, _ := wire.StringField(m.Raw, e, "name")
		if s := translate.ToolTaskSupport(m.Raw, e); s != "" && len(t.support) < maxTaskTools {
			t.support[name] = s
		} else {
			delete(t.support, name)
		}
	}
}

// maxTaskTools bounds the tools whose taskSupport is remembered; a tool
// past it is called without a task.
const maxTaskTools = 4096

func (t *toolCache) taskSupport(name string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.support[name]
}
