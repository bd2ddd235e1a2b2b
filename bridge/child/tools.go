package child

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate/tasks"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// toolCache remembers the x-mcp-header bindings of the child's tools, so
// that Mcp-Param-* headers can be checked against tools/call arguments
// (2026-07-28 streamable-http §Server behavior for custom headers). It is
// filled when the child starts and from every tools/list result that passes
// through.
// maxCachedTools bounds the toolCache: a child listing more tools than this
// gets the rest passed through unchecked, like tools not seen yet.
const maxCachedTools = 4096

type ToolCache struct {
	mu       sync.Mutex
	bindings map[string][]wire.ParamBinding // tool name -> bindings (nil: none)
	support  tasks.ToolSupport              // a legacy child's tools' execution.taskSupport (TaskSupport)
}

func (t *ToolCache) Lookup(name string) ([]wire.ParamBinding, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.bindings[name]
	return b, ok
}

// Absorb records the tools of one tools/list result page.
func (t *ToolCache) Absorb(raw []byte, result wire.Span) (nextCursor string) {
	tools, ok := wire.Field(raw, result, "tools")
	if !ok {
		return ""
	}
	elems, err := wire.Elements(raw, tools)
	if err != nil {
		return ""
	}
	found := make(map[string][]wire.ParamBinding, len(elems))
	support := map[string]string{}
	for _, e := range elems {
		name, ok := wire.StringField(raw, e, "name")
		if !ok {
			continue
		}
		var b []wire.ParamBinding
		if schema, ok := wire.Field(raw, e, "inputSchema"); ok {
			b, _ = wire.ToolBindings(raw[schema.Start:schema.End])
		}
		found[name] = b
		if ts := translate.ToolTaskSupport(raw, e); ts != "" {
			support[name] = ts
		}
	}
	t.mu.Lock()
	if t.bindings == nil {
		t.bindings = make(map[string][]wire.ParamBinding)
	}
	for k, v := range found {
		if _, ok := t.bindings[k]; ok || len(t.bindings) < maxCachedTools {
			t.bindings[k] = v
			t.support.Note(k, support[k])
		}
	}
	t.mu.Unlock()
	cursor, _ := wire.StringField(raw, result, "nextCursor")
	return cursor
}

// prefetch lists every tool of a newly started child; base holds the
// params every page request carries (the _meta envelope for a modern
// child, nothing for a legacy one).
func (t *ToolCache) prefetch(ctx context.Context, conn *Conn, base []byte) {
	cursor := ""
	for range 100 { // bounded: a child that pages forever is not our problem
		params := base
		if cursor != "" {
			c, _ := json.Marshal(cursor)
			params = append(append([]byte(`{"cursor":`), c...), '}')
			if len(base) > 2 {
				params = append(append(params[:len(params)-1], ','), base[1:]...)
			}
		}
		resp, err := conn.Request(ctx, "tools/list", params)
		if err != nil || !resp.Result.Present() {
			return
		}
		if cursor = t.Absorb(resp.Raw, resp.Result); cursor == "" {
			return
		}
	}
}
