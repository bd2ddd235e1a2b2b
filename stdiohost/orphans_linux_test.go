package stdiohost

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// A grandchild that called setsid escapes the group kill of Close; as a
// child subreaper the process inherits it, reaps it if it exits, and ends
// it at Orphans.Close even though it ignores SIGTERM.
func TestOrphansKilledAtClose(t *testing.T) {
	o, err := AdoptOrphans(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c := newCollector()
	h, err := Start(helperCmd("escapee"), Options{OnMessage: c.on, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var exits, stays int
	if _, err := fmt.Sscan(c.next(t), &exits, &stays); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killPid(exits); killPid(stays) })
	h.Close()
	// The group kill missed both; they now belong to this process.
	for _, pid := range []int{exits, stays} {
		if _, ppid, ok := procStat(pid); !ok || ppid != os.Getpid() || !alive(pid) {
			t.Fatalf("grandchild %d: running %v, parent %d; want a running process inherited by %d", pid, alive(pid), ppid, os.Getpid())
		}
	}
	// One exits while the bridge runs: it is reaped, not left a zombie.
	unix.Kill(exits, unix.SIGKILL)
	waitVanished(t, exits)
	if !alive(stays) {
		t.Fatal("the other grandchild died too")
	}
	o.Close()
	// Gone and reaped at Close's return, SIGTERM ignored notwithstanding.
	if _, _, ok := procStat(stays); ok {
		t.Errorf("grandchild %d still exists after Close", stays)
	}
}

// waitVanished waits until pid is gone from /proc: dead and reaped.
func waitVanished(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // a bound for a failure only: reaping on a loaded machine
	for {
		if _, _, ok := procStat(pid); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d was not reaped", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling the kernel, not synchronizing goroutines
	}
}
