//go:build unix

package oauth

import (
	"errors"
	"os"
	"syscall"
)

const isWindows = false

// tryLock takes an exclusive flock on f without blocking. flock locks
// belong to the open file description, so two opens in one process exclude
// each other too, and the kernel drops the lock when the process dies.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
