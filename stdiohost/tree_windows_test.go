package stdiohost

import (
	"fmt"
	"testing"
	"time"
)

// The twin of TestOrphansKilledAtClose (Linux): a grandchild that tries to
// leave the tree is refused, and dies with the job at Close.
func TestJobHoldsEscapee(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("escapee"), Options{OnMessage: c.on, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	var refused bool
	if _, err := fmt.Sscan(c.next(t), &pid, &refused); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killPid(pid) })
	if !refused {
		t.Error("CREATE_BREAKAWAY_FROM_JOB was allowed: the grandchild left the job")
	}
	if !alive(pid) {
		t.Fatalf("grandchild %d not running", pid)
	}
	h.Close()
	waitGone(t, pid)
}
