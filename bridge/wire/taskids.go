package wire

import "bytes"

// RelatedTaskKey is the _meta key that ties a message to a task
// (2025-11-25 tasks §Related Task Metadata: "Include this in the _meta
// field under the key io.modelcontextprotocol/related-task").
const RelatedTaskKey = "io.modelcontextprotocol/related-task"

// TaskIDSpans returns the spans of the task ids m carries, string values
// only, wherever either generation of tasks puts them in params or result:
//   - taskId (tasks/get, tasks/update, tasks/cancel, tasks/result requests;
//     SEP-2663's CreateTaskResult, a Task, notifications/tasks and 2025's
//     notifications/tasks/status);
//   - task.taskId (2025-11-25's CreateTaskResult);
//   - tasks[].taskId (tasks/list);
//   - notifications.taskIds[] (subscriptions/listen and its
//     acknowledgement, SEP-2663 §Task Status Notifications);
//   - _meta["io.modelcontextprotocol/related-task"].taskId.
//
// Whoever renames task ids between two peers (the aggregate's namespaces,
// serve's replica prefix) renames them all through this one list.
func TaskIDSpans(m *Message) []Span {
	if !bytes.Contains(m.Raw, []byte("askId")) && !bytes.Contains(m.Raw, []byte(`\u`)) {
		return nil // the common case, one scan
	}
	var out []Span
	str := func(sp Span, ok bool) {
		if ok && sp.Present() && m.Raw[sp.Start] == '"' {
			out = append(out, sp)
		}
	}
	for _, body := range []Span{m.Params, m.Result} {
		if !body.Present() || m.Raw[body.Start] != '{' {
			continue
		}
		str(Field(m.Raw, body, "taskId"))
		if task, ok := Field(m.Raw, body, "task"); ok {
			str(Field(m.Raw, task, "taskId"))
		}
		if tasks, ok := Field(m.Raw, body, "tasks"); ok {
			elems, _ := Elements(m.Raw, tasks)
			for _, e := range elems {
				str(Field(m.Raw, e, "taskId"))
			}
		}
		if n, ok := Field(m.Raw, body, "notifications"); ok {
			if ids, ok := Field(m.Raw, n, "taskIds"); ok {
				elems, _ := Elements(m.Raw, ids)
				for _, e := range elems {
					str(e, true)
				}
			}
		}
		if meta, ok := Field(m.Raw, body, "_meta"); ok {
			if rel, ok := Field(m.Raw, meta, RelatedTaskKey); ok {
				str(Field(m.Raw, rel, "taskId"))
			}
		}
	}
	return out
}

// RewriteTaskIDs returns m's bytes with every task id of TaskIDSpans
// replaced by f of it, or m.Raw itself when m carries none.
func RewriteTaskIDs(m *Message, f func(id string) string) []byte {
	spans := TaskIDSpans(m)
	if len(spans) == 0 {
		return m.Raw
	}
	edits := make([]Edit, 0, len(spans))
	for _, sp := range spans {
		id, _ := StringValue(m.Raw, sp)
		edits = append(edits, Edit{Span: sp, Value: AppendString(nil, f(id))})
	}
	return Splice(m.Raw, edits...)
}
