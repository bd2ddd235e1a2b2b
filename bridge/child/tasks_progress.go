package child

import "github.com/mcp-bridge/mcp-bridge/bridge/wire"

// Progress of a task-augmented call (issue #24). 2025-11-25 tasks §Task
// Progress Notifications: "The progressToken provided in the initial
// request remains valid throughout the task lifetime" — the child goes on
// reporting under it after the call was answered with its
// CreateTaskResult. The call is gone from the child connection by then,
// so the bridge keeps, for the task's binding, the session that created it
// and the client's token, and sends that progress to the session's stream
// alone: a task's progress is its owner's, like its status. A 2026-07-28
// call has no stream left to carry it (SEP-2663: progress is "not
// supported on tasks in general"), so its progress stays dropped.

// progressRoute is where a task's progress goes.
type progressRoute struct {
	sess  Session
	token []byte // the client's progress token, verbatim
}

// keepTaskProgress records, for task id just bound to cl's principal,
// where the child's later progress under cl's token goes.
func (c *Conn) keepTaskProgress(cl *Call, id string) {
	_, token, _ := cl.Target()
	if cl.Sess == nil || token == nil {
		return
	}
	c.tasks.KeepProgress(id, cl.ChildID, progressRoute{sess: cl.Sess, token: clone(token)})
}

// taskProgress delivers a progress notification under child token id to
// the owner of the task it reports on; false if it reports on none.
func (c *Conn) taskProgress(id int64, m *wire.Message) bool {
	task, r, ok := c.tasks.Progress(id)
	if !ok {
		return false
	}
	// Still bound to the session's principal (not expired, not evicted).
	if !c.tasks.Owns(r.sess.OwnerKey(), task) {
		return false
	}
	r.sess.Route(m, false, wire.Edit{Span: m.ProgressToken, Value: r.token})
	return true
}
