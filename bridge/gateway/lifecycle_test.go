package gateway

import (
	"fmt"
	"testing"
)

// A server retired once Close has begun (a reload or an idle caller's
// eviction racing shutdown) is closed before retire returns: Close no
// longer knows the route, and a goroutine started now would be joined by
// no one.
func TestRetireAfterCloseRunsInline(t *testing.T) {
	tg := startGateway(t, fmt.Sprintf(`{"mcpServers": {"memos": {"command": %q}}}`, bins["memos"]))
	tg.mu.RLock()
	rt := tg.routes["memos"]
	tg.mu.RUnlock()
	if rt == nil {
		t.Fatal("no route for memos")
	}
	tg.Close()
	ran := false
	tg.retire(rt, "test", func() { ran = true })
	if !ran {
		t.Fatal("retire after Close returned before the old handler was closed")
	}
}
