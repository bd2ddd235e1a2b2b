package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks on a child several principals share (issue #24).
//
// A child behind the bridge sees one client — the bridge — so it cannot
// tell whose task is whose, yet both generations require it: 2025-11-25
// tasks §Security ("If context-binding is available, receivers MUST reject
// tasks/get, tasks/result, and tasks/cancel requests for tasks that do not
// belong to the same authorization context as the requestor. For
// tasks/list requests, receivers MUST ensure the returned task list
// includes only tasks associated with the requestor's authorization
// context"), and SEP-2663 has servers check authorization on each task
// request. The bridge knows the principal of every request, so it binds
// each task to the principal whose tools/call created it, and keeps
// everyone else's requests for it from reaching the child.
//
// Fail closed: a task the bridge did not see created (another principal's,
// a made-up id, one of a child that has since restarted, one forgotten at
// the table's bound) is answered by the bridge itself with the error the
// spec gives for a missing task (-32602, "Invalid or nonexistent taskId"),
// identical in every case, so the answer says nothing about whether the id
// exists. The table lives with the child connection and is emptied when a
// new process is attached: a restarted child's tasks are gone with it.
//
// Task ids are routable and never reused (issue #24): the client knows a
// child's task id behind a prefix, "<replica>.<epoch>." with --replica-id
// ("<epoch>." without), where epoch is random per child process. A load
// balancer sends a tasks request to the replica its Mcp-Name (= taskId,
// SEP-2663 §Streamable HTTP: Routing Headers) names, as it does a 2025
// session by its id (examples/deploy); and the id a restarted child hands
// out again is another id for the client, so an old one answers as a
// missing task rather than as the new child's task. Every task id in a
// child's message (wire.TaskIDSpans) gets the prefix on the way out
// (exposeTasks); the table binds the ids as the client knows them, and a
// request's lose the prefix once they passed the checks (internalTasks).

// Bounds of the table. A principal at its share loses its own
// soonest-expiring task, so no principal can push another's out; only the
// table as a whole at its cap (maxTasks/maxTasksPer principals busy at
// once) evicts across principals.
const (
	maxTasks    = 10000
	maxTasksPer = 1000
	// defaultTaskTTL is how long a task without a ttl (absent, or null
	// for unlimited) stays bound; maxTaskTTL caps a child's ttl.
	defaultTaskTTL = 24 * time.Hour
	maxTaskTTL     = 7 * 24 * time.Hour
	// maxCreateResult: a CreateTaskResult is one Task, a few hundred
	// bytes. A larger tools/call result is not walked for one (so a big
	// result costs no extra pass); were it a task, it would stay unbound,
	// which fails closed.
	maxCreateResult = 64 << 10
)

// errTaskNotFound is what a request for a task not bound to its principal
// gets (2025-11-25 tasks §Protocol Errors).
const errTaskNotFound = "Task not found"

type taskBinding struct {
	owner    string // Principal.key
	expires  time.Time
	progress int64 // the child's progress token of the call that created it; 0: none (tasks_progress.go)
}

// taskTable binds task ids to the principals that created them.
type taskTable struct {
	mu     sync.Mutex
	tasks  map[string]taskBinding // by the id the client knows
	count  map[string]int         // tasks per owner
	prefix string                 // of the ids of this child process
	now    func() time.Time
	// progress: where a task's progress goes after its call ended, by
	// the child's progress token (tasks_progress.go).
	progress map[int64]progressRoute
}

func (t *taskTable) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// reset forgets every task: the child they belonged to is gone. The ids
// of the next one get a new epoch, under replica's name.
func (t *taskTable) reset(replica string) {
	p := newTaskPrefix(replica)
	t.mu.Lock()
	t.tasks, t.count, t.prefix, t.progress = nil, nil, p, nil
	t.mu.Unlock()
}

// newTaskPrefix is "<replica>.<epoch>." (or "<epoch>."): 48 random bits,
// so that no two child processes, of this replica or a restarted one,
// share a prefix.
func newTaskPrefix(replica string) string {
	var b [6]byte
	rand.Read(b[:])
	p := hex.EncodeToString(b[:]) + "."
	if replica != "" {
		p = replica + "." + p
	}
	return p
}

// idPrefix returns the current prefix (one is made if no child was
// attached yet).
func (t *taskTable) idPrefix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prefix == "" {
		t.prefix = newTaskPrefix("")
	}
	return t.prefix
}

// bind records that owner created task id, for ttl (0: defaultTaskTTL).
func (t *taskTable) bind(id, owner string, ttl time.Duration) {
	if ttl <= 0 {
		ttl = defaultTaskTTL
	}
	ttl = min(ttl, maxTaskTTL)
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks, t.count = map[string]taskBinding{}, map[string]int{}
	}
	if old, ok := t.tasks[id]; ok {
		// The child handed out an id it had given before: the old binding
		// ends, the new creator owns it.
		t.drop(id, old)
	}
	if t.count[owner] >= maxTasksPer {
		t.evict(now, owner)
	}
	if len(t.tasks) >= maxTasks {
		t.evict(now, "")
	}
	t.tasks[id] = taskBinding{owner: owner, expires: now.Add(ttl)}
	t.count[owner]++
}

func (t *taskTable) drop(id string, b taskBinding) {
	delete(t.tasks, id)
	if b.progress != 0 {
		delete(t.progress, b.progress)
	}
	if t.count[b.owner]--; t.count[b.owner] <= 0 {
		delete(t.count, b.owner)
	}
}

// evict drops the expired bindings (of owner, or of all when owner is
// ""), and, if none had, the one that expires soonest.
func (t *taskTable) evict(now time.Time, owner string) {
	var soonest string
	var at time.Time
	freed := false
	for id, b := range t.tasks {
		if owner != "" && b.owner != owner {
			continue
		}
		if !now.Before(b.expires) {
			t.drop(id, b)
			freed = true
			continue
		}
		if soonest == "" || b.expires.Before(at) {
			soonest, at = id, b.expires
		}
	}
	if !freed && soonest != "" {
		t.drop(soonest, t.tasks[soonest])
	}
}

// owns reports whether task id is bound to owner and has not expired.
func (t *taskTable) owns(owner, id string) bool {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.tasks[id]
	if !ok {
		return false
	}
	if !now.Before(b.expires) {
		t.drop(id, b)
		return false
	}
	return b.owner == owner
}

// ownerOf returns the principal task id is bound to.
func (t *taskTable) ownerOf(id string) (string, bool) {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.tasks[id]; ok && now.Before(b.expires) {
		return b.owner, true
	}
	return "", false
}

func (t *taskTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks)
}

// taskMethod reports whether method addresses one task by params.taskId:
// SEP-2663's tasks/get, tasks/update, tasks/cancel and 2025-11-25's
// tasks/get, tasks/result, tasks/cancel.
func taskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result":
		return true
	}
	return false
}

// principalKey is whom a call acts for: a legacy session's owner, or the
// principal of a modern request.
func (cl *call) principalKey() string {
	if cl.sess != nil {
		return cl.sess.owner.Key()
	}
	return cl.who.Key()
}

// checkTasks is what childConn.start asks of every request: the message
// to send instead of m (a listen request keeps only the caller's task
// ids), or why the bridge answers it itself — a request for a task not
// bound to cl's principal.
func (c *childConn) checkTasks(cl *call, m *wire.Message) (*wire.Message, string) {
	if cl.internal != nil || m.Kind != wire.KindRequest {
		return m, ""
	}
	if taskMethod(m.Method) && !c.tasks.owns(cl.principalKey(), m.TaskID) {
		return m, errTaskNotFound
	}
	if m.Method == "subscriptions/listen" {
		out, ok := c.ownListenTasks(cl, m)
		if !ok {
			return m, "Invalid params: params.notifications.taskIds in more than one spelling"
		}
		m = out
	}
	return c.internalTasks(m), ""
}

// exposeTasks gives every task id of a child's message the prefix of the
// child's process, in place.
func (c *childConn) exposeTasks(m *wire.Message) {
	if len(wire.TaskIDSpans(m)) == 0 {
		return
	}
	p := c.tasks.idPrefix()
	var out wire.Message
	if wire.Parse(wire.RewriteTaskIDs(m, func(id string) string { return p + id }), &out) == nil {
		*m = out
	}
}

// internalTasks returns m with its task ids as the child knows them. One
// without the prefix of the child's process (made up, or of a child that
// has since restarted) becomes "", which no task has: it cannot reach a
// task of the new child by its bare id.
func (c *childConn) internalTasks(m *wire.Message) *wire.Message {
	if len(wire.TaskIDSpans(m)) == 0 {
		return m
	}
	var out wire.Message
	if wire.Parse(c.rewriteInternal(m), &out) != nil {
		return m // cannot happen: strings replaced strings
	}
	return &out
}

func (c *childConn) rewriteInternal(m *wire.Message) []byte {
	p := c.tasks.idPrefix()
	return wire.RewriteTaskIDs(m, func(id string) string {
		if inner, ok := strings.CutPrefix(id, p); ok {
			return inner
		}
		return ""
	})
}

// internalAnswer is internalTasks for a client's answer to one of the
// child's requests, raw: "All requests, notifications, and responses
// related to a task MUST include the io.modelcontextprotocol/related-task
// key" (2025-11-25 tasks), so an answer to an elicitation of a task names
// the task as the client knows it.
func (c *childConn) internalAnswer(raw []byte) []byte {
	var m wire.Message
	if wire.Parse(raw, &m) != nil || len(wire.TaskIDSpans(&m)) == 0 {
		return raw
	}
	return c.rewriteInternal(&m)
}

// refuseTask answers a request the child must not see with -32602 and
// msg (see refuseHidden). For a task not bound to the caller, the answer
// is that of a missing task.
func (c *childConn) refuseTask(cl *call, method, msg string) error {
	c.log.Debug().Str("method", method).Str("reason", msg).Msg("tasks request refused by the bridge (not the caller's task)")
	return c.answerForChild(cl, wire.ErrorResponse(wire.AppendInt(nil, cl.childID), wire.CodeInvalidParams, msg, nil))
}

// bindTask records the task a tools/call result creates, if it is one:
// SEP-2663's CreateTaskResult ({"resultType":"task","taskId":…,"ttlMs":…})
// or 2025-11-25's ({"task":{"taskId":…,"ttl":…}}).
func (c *childConn) bindTask(cl *call, m *wire.Message) {
	if cl.method != "tools/call" || cl.internal != nil || !m.Result.Present() || m.Result.End-m.Result.Start > maxCreateResult {
		return
	}
	raw, res := m.Raw, m.Result
	obj, ttlKey := res, "ttlMs"
	if rt, ok := wire.StringField(raw, res, "resultType"); !ok || rt != "task" {
		task, ok := wire.Field(raw, res, "task")
		if !ok {
			return
		}
		obj, ttlKey = task, "ttl"
	}
	idSpan, okID, ttlSpan, okTTL := wire.Field2(raw, obj, "taskId", ttlKey)
	id, isString := wire.StringValue(raw, idSpan)
	if !okID || !isString || id == "" {
		return
	}
	var ttl time.Duration
	if okTTL {
		if ms, err := strconv.ParseInt(string(m.Bytes(ttlSpan)), 10, 64); err == nil && ms > 0 {
			ttl = time.Duration(min(ms, int64(maxTaskTTL/time.Millisecond))) * time.Millisecond
		}
	}
	c.tasks.bind(id, cl.principalKey(), ttl)
	c.keepTaskProgress(cl, id)
}

// filterTaskList keeps, of a tasks/list result page (2025-11-25), the
// tasks bound to cl's principal. Only the tasks array is rewritten; a page
// the bridge cannot read one way only (no tasks array, or one in two
// spellings) becomes an empty page rather than pass unfiltered.
func (c *childConn) filterTaskList(cl *call, m *wire.Message) *wire.Message {
	if !m.Result.Present() {
		return m
	}
	edit := wire.Edit{Span: m.Result, Value: []byte(`{"tasks":[]}`)}
	if tasks, ok := wire.Field(m.Raw, m.Result, "tasks"); ok {
		elems, _ := wire.Elements(m.Raw, tasks) // not an array: none kept
		who := cl.principalKey()
		kept := append(make([]byte, 0, tasks.End-tasks.Start), '[')
		for _, e := range elems {
			if id, _ := wire.StringField(m.Raw, e, "taskId"); id == "" || !c.tasks.owns(who, id) {
				continue
			}
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, m.Raw[e.Start:e.End]...)
		}
		edit = wire.Edit{Span: tasks, Value: append(kept, ']')}
	}
	var out wire.Message
	if err := wire.Parse(wire.Splice(m.Raw, edit), &out); err != nil {
		// Cannot happen (a valid array or object replaced a value); were
		// it to, the caller still gets no one else's tasks.
		wire.Parse(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: unreadable tasks/list result", nil), &out)
	}
	return &out
}

// answerForChild delivers raw, a response the bridge makes up in the
// child's place for cl (its id the child id), the way of any response:
// the client's id restored, a legacy session's bookkeeping settled. A
// hidden tool's call (refuseHidden) and another principal's task are
// answered so.
func (c *childConn) answerForChild(cl *call, raw []byte) error {
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

// ownListenTasks keeps, of the task ids a subscriptions/listen request
// names (SEP-2663 §Task Status Notifications: params.notifications.taskIds),
// those bound to cl's principal: each notifications/tasks carries the whole
// task, its result included, so listening is reading. refused is true when
// the list cannot be read one way only (two spellings of taskIds), ok
// is false: the request is answered with an error rather than forwarded.
func (c *childConn) ownListenTasks(cl *call, m *wire.Message) (out *wire.Message, ok bool) {
	if !m.Params.Present() {
		return m, true
	}
	notif, found := wire.Field(m.Raw, m.Params, "notifications")
	if !found {
		return m, !spelledOtherwise(m.Bytes(m.Params), "notifications")
	}
	ids, found := wire.Field(m.Raw, notif, "taskIds")
	if !found {
		return m, !spelledOtherwise(m.Bytes(notif), "taskIds")
	}
	elems, _ := wire.Elements(m.Raw, ids) // not an array: none kept
	who := cl.principalKey()
	kept := append(make([]byte, 0, ids.End-ids.Start), '[')
	for _, e := range elems {
		if id, _ := wire.StringValue(m.Raw, e); id == "" || !c.tasks.owns(who, id) {
			continue
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, m.Raw[e.Start:e.End]...)
	}
	var nm wire.Message
	if err := wire.Parse(wire.Splice(m.Raw, wire.Edit{Span: ids, Value: append(kept, ']')}), &nm); err != nil {
		return m, false
	}
	return &nm, true
}

// spelledOtherwise reports whether the object obj has key in a spelling
// some decoder reads as key (a duplicate, an escape, another case) — what
// is left when wire.Field found no one reading of it: absent, or
// ambiguous.
func spelledOtherwise(obj []byte, key string) bool {
	var keys map[string]json.RawMessage
	json.Unmarshal(obj, &keys)
	for k := range keys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// taskNotificationOwner returns whose task a task status notification is
// about (2025-11-25 notifications/tasks/status, SEP-2663
// notifications/tasks); ok is false for any other notification. bound is
// false for a task bound to no one: then it is nobody's to see.
func (c *childConn) taskNotificationOwner(m *wire.Message) (owner string, bound, ok bool) {
	if m.Method != "notifications/tasks/status" && m.Method != "notifications/tasks" {
		return "", false, false
	}
	id, _ := wire.StringField(m.Raw, m.Params, "taskId")
	owner, bound = c.tasks.ownerOf(id)
	return owner, bound, true
}
