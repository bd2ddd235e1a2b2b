package telemetry

import (
	"sync/atomic"
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
// without bound by inventing tool names. Looking up a value admitted a
// while ago, or any value once the set is full, takes no lock and does not
// allocate.
type capSet struct {
	m    readMap[string, struct{}]
	free int         // values still admitted besides the preset ones; under m.mu
	full atomic.Bool // free is 0 and m.read holds every admitted value
}

func (c *capSet) init(max int, preset ...string) {
	c.m.dirty, c.free = make(map[string]struct{}, len(preset)), max
	for _, v := range preset {
		c.m.dirty[v] = struct{}{}
	}
	c.m.publish()
}

func (c *capSet) get(v string) string {
	if v == "" {
		return ""
	}
	if _, ok := (*c.m.read.Load())[v]; ok {
		return v
	}
	if c.full.Load() || len(v) > maxLabelLen || !utf8.ValidString(v) {
		return Other
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if _, ok := c.m.dirty[v]; ok {
		c.m.missed()
		return v
	}
	if c.free <= 0 {
		return Other
	}
	c.free--
	c.m.dirty[v] = struct{}{}
	if c.free == 0 {
		// From now on a value not in read is Other without a lock.
		c.m.publish()
		c.full.Store(true)
	} else {
		c.m.missed()
	}
	return v
}
