//go:build unix

package stdiohost

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A process group of its own lets one signal reach the child and every
	// descendant it spawned (supergateway PR#124: `sh -c` children whose
	// grandchildren survived by the thousand).
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup signals every process in the group led by pgid. ESRCH (the
// group is already gone) is not an error worth reporting.
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}
