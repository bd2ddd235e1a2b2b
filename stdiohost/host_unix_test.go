//go:build unix

package stdiohost

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestCloseSendsSIGTERM(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("termable"), Options{OnMessage: c.on, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.next(t)
	// The helper ignores stdin EOF but dies of SIGTERM.
	if err := h.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	var ee *exec.ExitError
	if !errors.As(h.Err(), &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("Err() = %v, want death by SIGTERM", h.Err())
	}
}
