package stdiohost

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is an io.Writer that a test may read while Run writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A Run child that exits leaving a grandchild behind (one that ignores
// SIGTERM and holds the output pipes) does not leave it running: Run
// returns the exit status and the grandchild is gone.
func TestRunKillsLeftovers(t *testing.T) {
	var out lockedBuffer
	start := time.Now()
	res, err := Run(context.Background(), helperCmd("grandchild"), RunOptions{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stopped {
		t.Errorf("result %+v, want exit 0, not stopped", res)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	waitGone(t, pid)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %v", d)
	}
}

// When ctx ends, a child that ignores SIGTERM is killed after the grace,
// and Run reports it as stopped.
func TestRunStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	ready := make(chan struct{})
	w := writerFunc(func(p []byte) (int, error) {
		out.Write(p)
		if strings.Contains(out.String(), "ready") {
			select {
			case <-ready:
			default:
				close(ready)
			}
		}
		return len(p), nil
	})
	done := make(chan RunResult, 1)
	go func() {
		res, err := Run(ctx, helperCmd("stubborn"), RunOptions{Stdout: w, Grace: 200 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("child never became ready")
	}
	cancel()
	select {
	case res := <-done:
		if !res.Stopped || res.ExitCode == 0 {
			t.Errorf("result %+v, want stopped with a non-zero status", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
