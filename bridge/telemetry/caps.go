package telemetry

import (
	"sync"
	"unicode/utf8"
)

// knownMethods are the MCP methods the semantic conventions list (and the
// 2026-07-28 ones): they never count against the method cap.
var knownMethods = []string{
	"initialize", "ping", "completion/complete", "logging/setLevel",
	"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/read", "resources/templates/list",
	"resources/subscribe", "resources/unsubscribe",
	"server/discover", "subscriptions/listen",
	"sampling/createMessage", "elicitation/create", "roots/list",
	"notifications/initialized", "notifications/cancelled", "notifications/progress",
}

// A capSet admits the first max distinct values of a label as themselves and
// turns every later one into Other, so that no client can grow /metrics
// without bound by inventing tool names. Lookups of a known value take a
// read lock and do not allocate.
type capSet struct {
	mu   sync.RWMutex
	seen map[string]struct{}
	free int // values still admitted besides the preset ones
}

func (c *capSet) init(max int, preset ...string) {
	c.seen, c.free = make(map[string]struct{}, len(preset)), max
	for _, v := range preset {
		c.seen[v] = struct{}{}
	}
}

func (c *capSet) get(v string) string {
	if v == "" {
		return ""
	}
	c.mu.RLock()
	_, ok := c.seen[v]
	full := c.free <= 0
	c.mu.RUnlock()
	switch {
	case ok:
		return v
	case full, len(v) > maxLabelLen, !utf8.ValidString(v):
		return Other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if c.free <= 0 {
		return Other
	}
	c.free--
	c.seen[v] = struct{}{}
	return v
}
