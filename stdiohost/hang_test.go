package stdiohost

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A child that never reads its stdin: a write that cannot finish within
// WriteTimeout returns ErrHung, and the child's group is killed.
func TestWriteTimeoutKillsHungChild(t *testing.T) {
	h, err := Start(exec.Command("sleep", "60"), Options{WriteTimeout: 500 * time.Millisecond, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	msg := bytes.Repeat([]byte("x"), 4<<20) // more than any pipe buffer
	t0 := time.Now()
	err = h.Send(msg)
	took := time.Since(t0)
	if !errors.Is(err, ErrHung) || !h.Hung() {
		t.Fatalf("Send to a child that does not read: %v (hung %v), want ErrHung", err, h.Hung())
	}
	if took > 10*time.Second {
		t.Errorf("Send returned after %v, want about the 500ms write timeout", took)
	}
	select {
	case <-h.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("hung child not killed")
	}
	t.Logf("write to a child that does not read: ErrHung after %v", took.Round(time.Millisecond))
	if err := h.Send([]byte("{}")); err == nil {
		t.Error("Send to a killed child succeeded")
	}
}
