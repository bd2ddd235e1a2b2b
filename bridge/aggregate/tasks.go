package aggregate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Tasks through the aggregate (issue #24): 2025-11-25's experimental tasks
// (tools/call with params.task, tasks/get, tasks/result, tasks/cancel,
// tasks/list, notifications/tasks/status, the related-task meta), and
// SEP-2663's tasks/update and notifications/tasks as serve's translation
// hands them over.
//
// A task id belongs to the server that minted it, and two servers may
// mint the same one ("task-1"), so the client sees each under a namespace
// of its server: <server>/<mac>/<the server's id>. mac is an HMAC of the
// server name and the id under a key of this process, so an id the
// client edits — another server's name in front, or another id behind —
// matches nothing and is answered as a missing task, not routed. Every
// task id a server sends, wherever it is (wire.TaskIDSpans), is renamed
// on the way in (namespaceTasks), and a tasks request is routed by its
// params.taskId to the server in it, under the server's own id.

const (
	// maxTaskID bounds a server's task id: the exposed one is the server
	// name and 18 bytes longer, and travels in an HTTP header (Mcp-Name).
	maxTaskID  = 1024
	taskMACLen = 16 // hex digits: 64 bits
	// errTaskNotFound is the answer for an id that is no task of a
	// routable server (2025-11-25 tasks §Protocol Errors: "Invalid or
	// nonexistent taskId: -32602"; SEP-2663 gives the same).
	errTaskNotFound = "Task not found"
)

// taskKey signs the namespaces this process hands out.
var taskKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

func init() {
	// The tasks methods, next to the others in session.go's table.
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel", "tasks/result"} {
		methods[m] = (*session).byTask
	}
	methods["tasks/list"] = (*session).listTasks
}

func taskMAC(server, id string) string {
	h := hmac.New(sha256.New, taskKey)
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return hex.EncodeToString(h.Sum(nil))[:taskMACLen]
}

// exposeTaskID is the id the client knows server's task id by; "" for an
// id over maxTaskID.
func exposeTaskID(server, id string) string {
	if len(id) > maxTaskID {
		return ""
	}
	return server + "/" + taskMAC(server, id) + "/" + id
}

// taskOf undoes exposeTaskID for server: the server's own id, and whether
// exposed is an id exposeTaskID made for server.
func taskOf(server, exposed string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(exposed, server+"/")
	if !ok || len(rest) < taskMACLen+1 || rest[taskMACLen] != '/' {
		return "", false
	}
	mac, id := rest[:taskMACLen], rest[taskMACLen+1:]
	if len(id) > maxTaskID || !hmac.Equal([]byte(mac), []byte(taskMAC(server, id))) {
		return "", false
	}
	return id, true
}

// namespaceTasks renames the task ids of a message of d in place (see
// fromServer). An id over maxTaskID becomes "": the client cannot use it,
// and nothing longer reaches a header.
func (d *downstream) namespaceTasks(m *wire.Message) {
	if len(wire.TaskIDSpans(m)) == 0 {
		return
	}
	raw := wire.RewriteTaskIDs(m, func(id string) string {
		e := exposeTaskID(d.name, id)
		if e == "" {
			d.s.warn.Warn(d.log, "server-long-task-id").Int("bytes", len(id)).Msg("aggregate: a server's task id is over the bound; the client gets an empty one")
		}
		return e
	})
	var out wire.Message
	if err := wire.Parse(raw, &out); err != nil {
		return // cannot happen: strings replaced strings
	}
	*m = out
}

// ownTasks returns the client's message raw for d with its task ids as d
// knows them (the related-task meta of an answer to d's elicitation,
// say); an id that is not one of d's becomes "", no task of d's.
func (d *downstream) ownTasks(raw []byte) []byte {
	var m wire.Message
	if wire.Parse(raw, &m) != nil || len(wire.TaskIDSpans(&m)) == 0 {
		return raw
	}
	return wire.RewriteTaskIDs(&m, func(exposed string) string {
		id, _ := taskOf(d.name, exposed)
		return id
	})
}

// byTask routes tasks/get, tasks/update, tasks/cancel and tasks/result to
// the server in the task id, under the server's own id.
func (s *session) byTask(ctx context.Context, m *wire.Message) []byte {
	at, ok := wire.Field(m.Raw, m.Params, "taskId")
	if !ok || m.TaskID == "" {
		return errorFor(m, wire.CodeInvalidParams, "aggregate: params.taskId is missing")
	}
	// By each server's name, not by a separator: the aggregate takes any
	// name, "/" included.
	var d *downstream
	var id string
	for _, x := range s.downstreams() {
		if own, ok := taskOf(x.name, m.TaskID); ok && !x.isGone() {
			d, id = x, own
			break
		}
	}
	if d == nil {
		return errorFor(m, wire.CodeInvalidParams, errTaskNotFound)
	}
	resp, _ := s.forward(ctx, d, m, wire.Edit{Span: at, Value: wire.AppendString(nil, id)})
	return resp
}

// listTasks answers tasks/list with the tasks of every server that lists
// them, in server order, all pages in one (the aggregate hands out no
// cursor, as for the other lists). A server that fails or is late is left
// out of the answer.
func (s *session) listTasks(ctx context.Context, m *wire.Message) []byte {
	if _, ok := wire.Field(m.Raw, m.Params, "cursor"); ok {
		return errorFor(m, wire.CodeInvalidParams, "aggregate: invalid cursor")
	}
	var parts [][]byte
	for _, d := range s.downstreams() {
		if !d.caps.tasks.list || d.isGone() {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, s.cfg.ListTimeout)
		items, err := s.taskPages(lctx, d)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != "" {
			s.cfg.OnAbsent(d.name, "tasks/list")
			d.log.Warn().Str("reason", err).Msg("aggregate: server left out of tasks/list")
			continue
		}
		parts = append(parts, items...)
	}
	out := append([]byte(`{"tasks":[`), bytes.Join(parts, []byte(","))...)
	return wire.ResultResponse(m.IDBytes(), append(out, "]}"...))
}

// taskPages gathers the tasks of all of d's tasks/list pages, their ids
// already namespaced; err says why not.
func (s *session) taskPages(ctx context.Context, d *downstream) (items [][]byte, err string) {
	var cursor []byte
	for range maxPages {
		params := []byte(`{}`)
		if cursor != nil {
			params = append(append([]byte(`{"cursor":`), cursor...), '}')
		}
		r, cerr := d.call(ctx, "tasks/list", nil, func(id, _ []byte) []byte {
			return wire.Request(id, "tasks/list", params)
		})
		switch {
		case cerr != nil:
			return nil, cerr.Error()
		case !r.Result.Present():
			return nil, "error: " + string(r.Bytes(r.Error))
		}
		arr, _ := wire.Field(r.Raw, r.Result, "tasks")
		elems, eerr := wire.Elements(r.Raw, arr)
		if eerr != nil {
			return nil, "no tasks array"
		}
		for _, e := range elems {
			if len(items) >= maxItems {
				return items, ""
			}
			items = append(items, bytes.Clone(r.Bytes(e)))
		}
		next, ok := wire.Field(r.Raw, r.Result, "nextCursor")
		if !ok || r.Raw[next.Start] != '"' {
			return items, ""
		}
		cursor = bytes.Clone(r.Bytes(next))
	}
	return items, ""
}

// taskCaps is what a server's tasks capability offers (2025-11-25
// ServerCapabilities.tasks).
type taskCaps struct {
	any, list, cancel, toolsCall bool
}

func readTaskCaps(m *wire.Message, caps wire.Span) taskCaps {
	var c taskCaps
	t, ok := wire.Field(m.Raw, caps, "tasks")
	if !ok || m.Raw[t.Start] != '{' {
		return c
	}
	c.any = true
	_, c.list = wire.Field(m.Raw, t, "list")
	_, c.cancel = wire.Field(m.Raw, t, "cancel")
	if req, ok := wire.Field(m.Raw, t, "requests"); ok {
		if tools, ok := wire.Field(m.Raw, req, "tools"); ok {
			_, c.toolsCall = wire.Field(m.Raw, tools, "call")
		}
	}
	return c
}

// offerTasks is the tasks capability of the aggregate: what any of the
// servers ready at initialize offers, or nil when none has tasks — then
// the client is not told of tasks at all.
func offerTasks(ds []*downstream) map[string]any {
	var u taskCaps
	for _, d := range ds {
		c := d.caps.tasks
		u.any, u.list, u.cancel, u.toolsCall = u.any || c.any, u.list || c.list, u.cancel || c.cancel, u.toolsCall || c.toolsCall
	}
	if !u.any {
		return nil
	}
	out := map[string]any{}
	if u.list {
		out["list"] = struct{}{}
	}
	if u.cancel {
		out["cancel"] = struct{}{}
	}
	if u.toolsCall {
		out["requests"] = map[string]any{"tools": map[string]any{"call": struct{}{}}}
	}
	return out
}
