package child

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks on a child several principals share (issue #24): the child
// connection's table (tasks.Table, bridge/translate/tasks/tasktable.go)
// binds each task to the principal whose tools/call created it, and gives
// the ids the client knows the prefix of the child's process
// ("<replica>.<epoch>.", routable by Mcp-Name). This file is where a child's
// calls meet it: the principal a call acts for, and the bridge's own answer
// to a request for a task that is not the caller's.

// errTaskNotFound is what a request for a task not bound to its principal
// gets (2025-11-25 tasks §Protocol Errors).
const errTaskNotFound = tasks.ErrTaskNotFound

// principalKey is whom a call acts for: a legacy session's owner, or the
// principal of a modern request.
func (cl *Call) principalKey() string {
	if cl.Sess != nil {
		return cl.Sess.OwnerKey()
	}
	return cl.Who.Key()
}

// checkTasks is what Conn.start asks of every request: the message
// to send instead of m (a listen request keeps only the caller's task
// ids), or why the bridge answers it itself — a request for a task not
// bound to cl's principal.
func (c *Conn) checkTasks(cl *Call, m *wire.Message) (*wire.Message, string) {
	if cl.internal != nil || m.Kind != wire.KindRequest {
		return m, ""
	}
	if tasks.Method(m.Method) && !c.tasks.Owns(cl.principalKey(), m.TaskID) {
		return m, errTaskNotFound
	}
	if m.Method == "subscriptions/listen" {
		out, ok := c.tasks.OwnListen(cl.principalKey(), m)
		if !ok {
			return m, "Invalid params: params.notifications.taskIds in more than one spelling"
		}
		m = out
	}
	return c.tasks.Internal(m), ""
}

// InternalAnswer is a client's answer to one of the child's requests with
// its task ids as the child knows them (tasks.Table.InternalAnswer).
func (c *Conn) InternalAnswer(raw []byte) []byte { return c.tasks.InternalAnswer(raw) }

// refuseTask answers a request the child must not see with -32602 and
// msg (see refuseHidden). For a task not bound to the caller, the answer
// is that of a missing task.
func (c *Conn) refuseTask(cl *Call, method, msg string) error {
	c.log.Debug().Str("method", method).Str("reason", msg).Msg("tasks request refused by the bridge (not the caller's task)")
	return c.answerForChild(cl, wire.ErrorResponse(wire.AppendInt(nil, cl.ChildID), wire.CodeInvalidParams, msg, nil))
}

// bindTask records the task a tools/call result creates, if it is one
// (tasks.Table.BindCreated), and where its later progress goes.
func (c *Conn) bindTask(cl *Call, m *wire.Message) {
	if cl.Method != "tools/call" || cl.internal != nil {
		return
	}
	if id := c.tasks.BindCreated(m, cl.principalKey()); id != "" {
		c.keepTaskProgress(cl, id)
	}
}

// answerForChild delivers raw, a response the bridge makes up in the
// child's place for cl (its id the child id), the way of any response:
// the client's id restored, a legacy session's bookkeeping settled. A
// hidden tool's call (refuseHidden) and another principal's task are
// answered so.
func (c *Conn) answerForChild(cl *Call, raw []byte) error {
	var resp wire.Message
	if err := wire.Parse(raw, &resp); err != nil {
		return err
	}
	if err := c.register(cl); err != nil {
		return err
	}
	c.onResponse(&resp)
	return nil
}

// taskNotificationOwner returns whose task a task status notification is
// about (tasks.Table.NotificationOwner).
func (c *Conn) taskNotificationOwner(m *wire.Message) (owner string, bound, ok bool) {
	return c.tasks.NotificationOwner(m)
}

// taskAcrossEras gives a child's response the shape of the client's era,
// for the calls that cross eras (see onResponse).
func (c *Conn) taskAcrossEras(cl *Call, m *wire.Message) *wire.Message {
	switch {
	case cl.Complete:
		// A modern client's call the bridge made a task at the legacy
		// child (tasks.AugmentCall).
		return tasks.ResultToModern(cl.Method, m)
	case cl.Via == nil:
		return m // not a translated session's
	}
	return tasks.ResultToLegacy(cl.Method, m, cl.Method == "tools/list" && childOffersTasks(cl.Via.DiscoverResult()))
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

// TaskSupport is the legacy child's execution.taskSupport of tool, ""
// when its DiscoverResult offers no tasks (tasks.Tools).
func (sc *Shared) TaskSupport(tool string) string {
	support := sc.Tools.support.Of(tool)
	if support == "" || !childOffersTasks(sc.DiscoverResult()) {
		return ""
	}
	return support
}

// OwnsTask reports whether task id is bound to owner, a Principal.Key
// (tasks.Table.Owns): serve's tasks requests across eras ask it.
func (c *Conn) OwnsTask(owner, id string) bool { return c.tasks.Owns(owner, id) }

// InnerTask is task id as the child knows it (tasks.Table.Inner).
func (c *Conn) InnerTask(id string) string { return c.tasks.Inner(id) }
