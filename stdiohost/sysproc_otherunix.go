//go:build unix && !linux

package stdiohost

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
