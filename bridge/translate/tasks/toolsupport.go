package tasks

import (
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// ToolSupport remembers a legacy back's tools' execution.taskSupport
// (translate.ToolTaskSupport of each tool of its tools/list results):
// whether the bridge may make a 2026-07-28 front's call of one a task
// (AugmentCall), or must refuse a front that cannot take one (RefuseCall).
// The zero value is ready.
type ToolSupport struct {
	mu sync.Mutex
	m  map[string]string
}

// MaxTools bounds a ToolSupport: a tool past it is called without a task.
const MaxTools = 4096

// Note records tool's taskSupport ("" forgets it).
func (s *ToolSupport) Note(tool, support string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.m[tool]; support == "" || (!known && len(s.m) >= MaxTools) {
		delete(s.m, tool)
		return
	}
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[tool] = support
}

// Of returns tool's taskSupport ("" when unknown).
func (s *ToolSupport) Of(tool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[tool]
}

// NoteList records the tools of a legacy back's tools/list response m (a
// face that walks the tools anyway calls Note for each).
func (s *ToolSupport) NoteList(m *wire.Message) {
	tools, ok := wire.Field(m.Raw, m.Result, "tools")
	if !ok {
		return
	}
	elems, err := wire.Elements(m.Raw, tools)
	if err != nil {
		return
	}
	for _, e := range elems {
		name, _ := wire.StringField(m.Raw, e, "name")
		s.Note(name, translate.ToolTaskSupport(m.Raw, e))
	}
}
