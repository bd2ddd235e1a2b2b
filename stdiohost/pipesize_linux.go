package stdiohost

import (
	"os"
	"syscall"
)

// pipeSize is the capacity asked for the child's stdout pipe. A large
// result crosses a 64 KiB pipe in hundreds of wake-ups of both processes;
// 1 MiB (the default /proc/sys/fs/pipe-max-size) cuts that sixteen-fold.
const pipeSize = 1 << 20

// growPipe raises a pipe's capacity; failure (a lower system limit) only
// costs speed.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
		})
	}
}
