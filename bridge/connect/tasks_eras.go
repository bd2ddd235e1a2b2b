package connect

import (
	"context"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks across eras (issue #24): a 2025-11-25 host on a 2026-07-28 remote
// (legacyHost) and a 2026-07-28 host on a 2025 remote (modernHost). Which
// request takes which path, and the requests the bridge makes of the
// remote where one era's step is two of the other's, are
// bridge/translate/tasks', the same serve uses; this file is connect's
// adapter: a Front answering the host (one host, so no task table: the
// remote answers for every task), and a Back per remote era.

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

// taskFront is the host's request p as tasks.Front.
type taskFront struct {
	b *Bridge
	p *pending
}

func (f taskFront) Owns(string) tasks.Ownership { return tasks.Unchecked }
func (f taskFront) Answer(raw []byte)           { f.b.writeFinal(f.p, raw) }
func (f taskFront) Relay(resp *wire.Message)    { f.b.writeFinal(f.p, f.b.hostID(f.p, resp.Raw)) }
func (f taskFront) Fail(err error)              { f.b.answerError(f.p, err) }

// pollWait waits d between two polls of a task, or until ctx ends.
func pollWait(ctx context.Context, d time.Duration) error {
	if !tasks.Sleep(ctx, d, nil) {
		return ctx.Err()
	}
	return nil
}

// taskShape gives the remote's (2026-07-28) response to a legacy host's
// request of method the host's era (tasks.ResultToLegacy).
func (h *legacyHost) taskShape(method string, fm *wire.Message) *wire.Message {
	return tasks.ResultToLegacy(method, fm, method == "tools/list" && h.s.OffersTasks())
}

// roundTrip sends a request of the bridge's own to the modern remote, in
// the host's envelope (its headers derived from it, Mcp-Name = taskId for
// the tasks methods), and returns the response to it (remote.RoundTrip).
func (h *legacyHost) roundTrip(ctx context.Context, method string, params []byte) (*wire.Message, error) {
	b := h.b
	id := b.remote.MintID("task")
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
	return b.remote.RoundTrip(ctx, &m, nil)
}

// legacyTaskBack is the modern remote of a legacy host as tasks.Back.
type legacyTaskBack struct{ h *legacyHost }

func (t legacyTaskBack) Begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := t.h.ensureDiscovered(ctx); err != nil {
		return ctx, nil, err
	}
	ctx, cancel := t.h.b.host.RequestCtx(ctx)
	return ctx, cancel, nil
}

func (t legacyTaskBack) Request(ctx context.Context, method, taskID string) (*wire.Message, error) {
	return t.h.roundTrip(ctx, method, tasks.Params(taskID, nil))
}

func (legacyTaskBack) Wait(ctx context.Context, d time.Duration) error { return pollWait(ctx, d) }

// task answers the legacy host's tasks requests whose SEP-2663 counterpart
// differs in shape; false for the others (tasks.LegacyOverModern).
func (h *legacyHost) task(ctx context.Context, p *pending, m *wire.Message) bool {
	if !tasks.LegacyIntercepts(m.Method) {
		return false
	}
	return tasks.LegacyOverModern(ctx, taskFront{h.b, p}, legacyTaskBack{h}, m, p.id)
}

// remoteOffersTasks reports whether the legacy remote's InitializeResult
// offers tasks the bridge translates.
func (h *modernHost) remoteOffersTasks() bool {
	h.initMu.Lock()
	init := h.result
	h.initMu.Unlock()
	return translate.LegacyServerTasks(resultField(init, "capabilities"))
}

// TaskSupport is the legacy remote's execution.taskSupport of tool, ""
// when the remote offers no tasks (tasks.Tools).
func (h *modernHost) TaskSupport(tool string) string {
	support := h.b.remote.ToolSupport().Of(tool)
	if support == "" || !h.remoteOffersTasks() {
		return ""
	}
	return support
}

// augment prepares a 2026-07-28 host's tools/call for the legacy remote
// (tasks.AugmentCall).
func (h *modernHost) augment(m *wire.Message) *wire.Message { return tasks.AugmentCall(m, h) }

// taskShape gives the legacy remote's response to a modern host's request
// of method the host's era (tasks.ResultToModern), and learns the tools'
// taskSupport from tools/list.
func (h *modernHost) taskShape(method string, fm *wire.Message) *wire.Message {
	if method == "tools/list" && fm.Result.Present() {
		h.b.remote.ToolSupport().NoteList(fm)
	}
	return tasks.ResultToModern(method, fm)
}

// modernTaskBack is the legacy remote of a modern host as tasks.Back,
// for request m.
type modernTaskBack struct {
	h *modernHost
	m *wire.Message
}

func (t modernTaskBack) Begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := t.h.ensureSession(ctx, t.m); err != nil {
		return ctx, nil, err
	}
	ctx, cancel := t.h.b.host.RequestCtx(ctx)
	return ctx, cancel, nil
}

func (t modernTaskBack) Request(ctx context.Context, method, taskID string) (*wire.Message, error) {
	return t.h.b.remote.Request(ctx, "task", method, tasks.Params(taskID, nil), t.h.fromRemote)
}

func (modernTaskBack) Wait(ctx context.Context, d time.Duration) error { return pollWait(ctx, d) }

// task answers a 2026-07-28 host's tasks request for a task on the legacy
// remote; false for a request that is no tasks request
// (tasks.ModernOverLegacy).
func (h *modernHost) task(ctx context.Context, p *pending, m *wire.Message) bool {
	if refusal := tasks.RefuseCall(m, h, p.id); refusal != nil {
		h.b.writeFinal(p, refusal)
		return true
	}
	if !tasks.ModernIntercepts(m.Method) {
		return false
	}
	return tasks.ModernOverLegacy(ctx, taskFront{h.b, p}, modernTaskBack{h, m}, m, p.id)
}
