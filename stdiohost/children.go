package stdiohost

import (
	"os/exec"
	"sync"
)

// children records the children Start launched and has not yet waited for.
// The orphan reaper (orphans_linux.go) reaps only processes that are not in
// it: a child's exit status belongs to its exec.Cmd.Wait, and reaping it
// first would make that Wait fail.
var children = struct {
	// starting is read-held from cmd.Start until the pid is recorded, and
	// held by the reaper while it scans, so that no child can exit and be
	// taken for an orphan in between.
	starting sync.RWMutex
	mu       sync.Mutex
	pids     map[int]struct{}
}{pids: map[int]struct{}{}}

func startChild(cmd *exec.Cmd) error {
	children.starting.RLock()
	defer children.starting.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	children.mu.Lock()
	children.pids[cmd.Process.Pid] = struct{}{}
	children.mu.Unlock()
	return nil
}

// forgetChild is called once cmd.Wait has returned.
func forgetChild(pid int) {
	children.mu.Lock()
	delete(children.pids, pid)
	children.mu.Unlock()
}

func isChild(pid int) bool {
	children.mu.Lock()
	defer children.mu.Unlock()
	_, ok := children.pids[pid]
	return ok
}
