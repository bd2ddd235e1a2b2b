package tasks

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

// Tasks on a back several principals share (issue #24).
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
// (Expose); the table binds the ids as the client knows them, and a
// request's lose the prefix once they passed the checks (Internal).

// Bounds of the table. A principal at its share loses its own
// soonest-expiring task, so no principal can push another's out; only the
// table as a whole at its cap (MaxTasks/MaxTasksPer principals busy at
// once) evicts across principals.
const (
	MaxTasks    = 10000
	MaxTasksPer = 1000
	// DefaultTaskTTL is how long a task without a ttl (absent, or null
	// for unlimited) stays bound; MaxTaskTTL caps a child's ttl.
	DefaultTaskTTL = 24 * time.Hour
	MaxTaskTTL     = 7 * 24 * time.Hour
	// maxCreateResult: a CreateTaskResult is one Task, a few hundred
	// bytes. A larger tools/call result is not walked for one (so a big
	// result costs no extra pass); were it a task, it would stay unbound,
	// which fails closed.
	maxCreateResult = 64 << 10
)

type binding struct {
	owner    string // the principal's key
	expires  time.Time
	progress int64 // the back's progress token of the call that created it; 0: none
}

// progress is where a task's progress goes after its call ended.
type progress[R any] struct {
	task  string
	route R
}

// Table binds task ids to the principals that created them. R is where
// a task's progress goes after the call that created it was answered (a
// face's own: serve's is a session and the client's token). The zero
// Table is ready to use.
type Table[R any] struct {
	mu     sync.Mutex
	tasks  map[string]binding // by the id the client knows
	count  map[string]int     // tasks per owner
	prefix string             // of the ids of this child process
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
	// progress: where a task's progress goes after its call ended, by
	// the child's progress token (KeepProgress).
	progress map[int64]progress[R]
}

func (t *Table[R]) clock() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Reset forgets every task: the child they belonged to is gone. The ids
// of the next one get a new epoch, under replica's name.
func (t *Table[R]) Reset(replica string) {
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

// IDPrefix returns the current prefix (one is made if no child was
// attached yet).
func (t *Table[R]) IDPrefix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prefix == "" {
		t.prefix = newTaskPrefix("")
	}
	return t.prefix
}

// Bind records that owner created task id, for ttl (0: DefaultTaskTTL).
func (t *Table[R]) Bind(id, owner string, ttl time.Duration) {
	if ttl <= 0 {
		ttl = DefaultTaskTTL
	}
	ttl = min(ttl, MaxTaskTTL)
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks, t.count = map[string]binding{}, map[string]int{}
	}
	if old, ok := t.tasks[id]; ok {
		// The child handed out an id it had given before: the old binding
		// ends, the new creator owns it.
		t.drop(id, old)
	}
	if t.count[owner] >= MaxTasksPer {
		t.evict(now, owner)
	}
	if len(t.tasks) >= MaxTasks {
		t.evict(now, "")
	}
	t.tasks[id] = binding{owner: owner, expires: now.Add(ttl)}
	t.count[owner]++
}

func (t *Table[R]) drop(id string, b binding) {
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
func (t *Table[R]) evict(now time.Time, owner string) {
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

// Owns reports whether task id is bound to owner and has not expired.
func (t *Table[R]) Owns(owner, id string) bool {
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

// OwnerOf returns the principal task id is bound to.
func (t *Table[R]) OwnerOf(id string) (string, bool) {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.tasks[id]; ok && now.Before(b.expires) {
		return b.owner, true
	}
	return "", false
}

// Size is the number of bindings.
func (t *Table[R]) Size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks)
}

// KeepProgress records, for task id, the back's progress token of the
// call that created it and where the progress under it goes from now on
// (route); nothing if id is not bound.
func (t *Table[R]) KeepProgress(id string, token int64, route R) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.tasks[id]
	if !ok {
		return
	}
	if t.progress == nil {
		t.progress = map[int64]progress[R]{}
	}
	b.progress = token
	t.tasks[id] = b
	t.progress[token] = progress[R]{task: id, route: route}
}

// Progress returns the task a progress notification under the back's
// token reports on, and where it goes; ok is false if it reports on none.
func (t *Table[R]) Progress(token int64) (task string, route R, ok bool) {
	t.mu.Lock()
	p, ok := t.progress[token]
	t.mu.Unlock()
	return p.task, p.route, ok
}

// Method reports whether method addresses one task by params.taskId:
// SEP-2663's tasks/get, tasks/update, tasks/cancel and 2025-11-25's
// tasks/get, tasks/result, tasks/cancel.
func Method(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result":
		return true
	}
	return false
}

// Inner is the id the child knows for the task the client knows as id;
// "" for an id without the prefix of the child's process.
func (t *Table[R]) Inner(id string) string {
	inner, ok := strings.CutPrefix(id, t.IDPrefix())
	if !ok {
		return ""
	}
	return inner
}

// Expose gives every task id of a child's message the prefix of the
// child's process, in place.
func (t *Table[R]) Expose(m *wire.Message) {
	if len(wire.TaskIDSpans(m)) == 0 {
		return
	}
	p := t.IDPrefix()
	var out wire.Message
	if wire.Parse(wire.RewriteTaskIDs(m, func(id string) string { return p + id }), &out) == nil {
		*m = out
	}
}

// Internal returns m with its task ids as the child knows them. One
// without the prefix of the child's process (made up, or of a child that
// has since restarted) becomes "", which no task has: it cannot reach a
// task of the new child by its bare id.
func (t *Table[R]) Internal(m *wire.Message) *wire.Message {
	if len(wire.TaskIDSpans(m)) == 0 {
		return m
	}
	var out wire.Message
	if wire.Parse(t.rewriteInternal(m), &out) != nil {
		return m // cannot happen: strings replaced strings
	}
	return &out
}

func (t *Table[R]) rewriteInternal(m *wire.Message) []byte {
	p := t.IDPrefix()
	return wire.RewriteTaskIDs(m, func(id string) string {
		if inner, ok := strings.CutPrefix(id, p); ok {
			return inner
		}
		return ""
	})
}

// InternalAnswer is Internal for a client's answer to one of the child's
// requests, raw: "All requests, notifications, and responses related to a
// task MUST include the io.modelcontextprotocol/related-task key"
// (2025-11-25 tasks), so an answer to an elicitation of a task names the
// task as the client knows it.
func (t *Table[R]) InternalAnswer(raw []byte) []byte {
	var m wire.Message
	if wire.Parse(raw, &m) != nil || len(wire.TaskIDSpans(&m)) == 0 {
		return raw
	}
	return t.rewriteInternal(&m)
}

// BindCreated binds to owner the task a tools/call result m creates, if
// it is one: SEP-2663's CreateTaskResult ({"resultType":"task","taskId":…,
// "ttlMs":…}) or 2025-11-25's ({"task":{"taskId":…,"ttl":…}}). It returns
// the task's id ("" for none).
func (t *Table[R]) BindCreated(m *wire.Message, owner string) string {
	if !m.Result.Present() || m.Result.End-m.Result.Start > maxCreateResult {
		return ""
	}
	raw, res := m.Raw, m.Result
	obj, ttlKey := res, "ttlMs"
	if rt, ok := wire.StringField(raw, res, "resultType"); !ok || rt != "task" {
		task, ok := wire.Field(raw, res, "task")
		if !ok {
			return ""
		}
		obj, ttlKey = task, "ttl"
	}
	idSpan, okID, ttlSpan, okTTL := wire.Field2(raw, obj, "taskId", ttlKey)
	id, isString := wire.StringValue(raw, idSpan)
	if !okID || !isString || id == "" {
		return ""
	}
	var ttl time.Duration
	if okTTL {
		if ms, err := strconv.ParseInt(string(m.Bytes(ttlSpan)), 10, 64); err == nil && ms > 0 {
			ttl = time.Duration(min(ms, int64(MaxTaskTTL/time.Millisecond))) * time.Millisecond
		}
	}
	t.Bind(id, owner, ttl)
	return id
}

// FilterList keeps, of a tasks/list result page (2025-11-25), the tasks
// bound to owner. Only the tasks array is rewritten; a page the bridge
// cannot read one way only (no tasks array, or one in two spellings)
// becomes an empty page rather than pass unfiltered.
func (t *Table[R]) FilterList(owner string, m *wire.Message) *wire.Message {
	if !m.Result.Present() {
		return m
	}
	edit := wire.Edit{Span: m.Result, Value: []byte(`{"tasks":[]}`)}
	if tasks, ok := wire.Field(m.Raw, m.Result, "tasks"); ok {
		elems, _ := wire.Elements(m.Raw, tasks) // not an array: none kept
		kept := append(make([]byte, 0, tasks.End-tasks.Start), '[')
		for _, e := range elems {
			if id, _ := wire.StringField(m.Raw, e, "taskId"); id == "" || !t.Owns(owner, id) {
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

// OwnListen keeps, of the task ids a subscriptions/listen request names
// (SEP-2663 §Task Status Notifications: params.notifications.taskIds),
// those bound to owner: each notifications/tasks carries the whole task,
// its result included, so listening is reading. ok is false when the list
// cannot be read one way only (two spellings of taskIds): the request is
// answered with an error rather than forwarded.
func (t *Table[R]) OwnListen(owner string, m *wire.Message) (out *wire.Message, ok bool) {
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
	kept := append(make([]byte, 0, ids.End-ids.Start), '[')
	for _, e := range elems {
		if id, _ := wire.StringValue(m.Raw, e); id == "" || !t.Owns(owner, id) {
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

// NotificationOwner returns whose task a task status notification is
// about (2025-11-25 notifications/tasks/status, SEP-2663
// notifications/tasks); ok is false for any other notification. bound is
// false for a task bound to no one: then it is nobody's to see.
func (t *Table[R]) NotificationOwner(m *wire.Message) (owner string, bound, ok bool) {
	if m.Method != "notifications/tasks/status" && m.Method != "notifications/tasks" {
		return "", false, false
	}
	id, _ := wire.StringField(m.Raw, m.Params, "taskId")
	owner, bound = t.OwnerOf(id)
	return owner, bound, true
}
