package stdiohost

import "syscall"

// setDeathSignal asks the kernel to SIGKILL the child if the bridge dies
// without running Close (e.g. SIGKILL of the bridge itself). It covers the
// direct child; grandchildren are reached through the process group on
// every orderly exit path.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
