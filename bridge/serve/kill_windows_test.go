package serve

import "os"

// killPID ends one process, as SIGKILL does on Unix (TerminateProcess).
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}
