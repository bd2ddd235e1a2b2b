//go:build unix

package stdiohost

import (
	"errors"
	"os/exec"
	"syscall"
)

// A tree is the child and every process it starts, as far as the platform
// lets one handle reach them: on Unix a process group of its own (macOS
// and the BSDs alike), on Windows a Job Object (tree_windows.go). The two
// variants have the same methods:
//
//	prepare(cmd)  before cmd.Start: ask for the group/job at creation
//	attach(cmd)   after cmd.Start: take hold of the started process
//	stop()        ask the whole tree to exit (SIGTERM; Windows: terminate)
//	kill()        end the whole tree now (SIGKILL; Windows: terminate)
//	release()     drop the handle (Windows: closing the job kills what is left)
//
// A process that leaves the group (setsid, setpgid) escapes stop and kill;
// on Linux, AdoptOrphans reaches it anyway.
type tree struct{ pgid int }

func (t *tree) prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A process group of its own lets one signal reach the child and every
	// descendant it spawned (supergateway PR#124: `sh -c` children whose
	// grandchildren survived by the thousand).
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

func (t *tree) attach(cmd *exec.Cmd) error {
	t.pgid = cmd.Process.Pid
	return nil
}

func (t *tree) stop()    { t.signal(syscall.SIGTERM) }
func (t *tree) kill()    { t.signal(syscall.SIGKILL) }
func (t *tree) release() {}

// signal signals every process in the group. ESRCH (the group is already
// gone) is not an error worth reporting.
func (t *tree) signal(sig syscall.Signal) {
	if t.pgid > 0 {
		_ = syscall.Kill(-t.pgid, sig)
	}
}

// stoppedByUs tells whether the child's exit error is the death by signal
// that stop or kill caused, which Close does not report as an error.
func stoppedByUs(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
