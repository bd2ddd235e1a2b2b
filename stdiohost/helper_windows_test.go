package stdiohost

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// platformHelper: "escapee" tries to start a grandchild outside the job
// (CREATE_BREAKAWAY_FROM_JOB, which the job does not allow), then starts it
// detached from the console in a process group of its own, the nearest
// Windows has to setsid; it prints the pid and whether breakaway was
// refused, then serves like echo.
func platformHelper(mode string) int {
	if mode != "escapee" {
		return 2
	}
	start := func(flags uint32) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "STDIOHOST_HELPER=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
		return cmd, cmd.Start()
	}
	detached := uint32(windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP)
	cmd, err := start(detached | windows.CREATE_BREAKAWAY_FROM_JOB)
	refused := err != nil
	if refused {
		cmd, err = start(detached)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(cmd.Process.Pid, refused)
	return helperMain("echo")
}
