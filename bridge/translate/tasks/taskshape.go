package tasks

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// ResultToLegacy gives a 2026-07-28 back's response fm to a legacy front's
// request of method the front's era: a task as 2025-11-25 writes it, and
// (offers: the back declares the extension) tools a legacy front may call
// as tasks. fm itself when nothing changes.
func ResultToLegacy(method string, fm *wire.Message, offers bool) *wire.Message {
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
		if offers {
			out = translate.ToolsWithTaskSupport(fm.Bytes(fm.Result))
		}
	}
	return withResult(fm, out)
}

// ResultToModern gives a legacy back's response fm to a 2026-07-28 front's
// request of method the front's era: the CreateTaskResult of a tools/call
// the bridge made a task (AugmentCall), as SEP-2663 writes it.
func ResultToModern(method string, fm *wire.Message) *wire.Message {
	if method != "tools/call" || !fm.Result.Present() {
		return fm
	}
	out, _ := translate.CreateTaskToModern(fm.Bytes(fm.Result))
	return withResult(fm, out)
}

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

// AugmentCall prepares a 2026-07-28 front's tools/call for a legacy back:
// a `task` member the front sent is dropped (SEP-2663: servers "MUST
// ignore it"), and the bridge adds one when the front declared the
// extension and the tool may run as a task (translate.Augment).
func AugmentCall(m *wire.Message, t Tools) *wire.Message {
	if m.Method != "tools/call" {
		return m
	}
	// The front's capabilities are read only for a tool that may be a
	// task: a call costs no extra decoding where the back offers none.
	support := t.TaskSupport(m.Name)
	return translate.AugmentCall(m, support != "" && translate.Augment(translate.ClientDeclaresTasks(m), support))
}
