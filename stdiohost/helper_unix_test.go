//go:build unix

package stdiohost

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// platformHelper: "escapee" starts two grandchildren that leave the
// child's process group (setsid) and ignore SIGTERM, prints their pids,
// then serves like echo.
func platformHelper(mode string) int {
	if mode != "escapee" {
		return 2
	}
	var pids []any
	for range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "STDIOHOST_HELPER=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		pids = append(pids, cmd.Process.Pid)
	}
	fmt.Println(pids...)
	return helperMain("echo")
}
