package stdiohost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// RunOptions configure Run. The zero value is usable.
type RunOptions struct {
	// Stdout and Stderr receive the child's output as it is read, in
	// chunks of at most 32 KiB, each from a goroutine of its own. A writer
	// that must bound what it keeps does so itself; Run keeps nothing. A
	// nil writer discards the stream.
	Stdout, Stderr io.Writer

	// Grace is how long the tree gets between SIGTERM and SIGKILL once ctx
	// ends (Windows has no SIGTERM: the job is terminated at once). If
	// zero, 2s.
	Grace time.Duration
}

// A RunResult says how a Run child ended.
type RunResult struct {
	// ExitCode is the child's exit status, or -1 when a signal ended it.
	ExitCode int
	// Stopped is true when ctx ended before the child exited and Run
	// stopped the tree.
	Stopped bool
	// Err is cmd.Wait's error: nil for exit status 0, an *exec.ExitError
	// otherwise.
	Err error
}

// Run runs cmd to completion as a one-shot command, not an MCP server: the
// lifetime rules of a Host without the message stream. cmd's Stdout and
// Stderr must be unset (Run owns both); a nil Stdin reads as empty.
//
// The child starts in a tree of its own (process group or Job Object, as
// for Start). When ctx ends first, the whole tree gets SIGTERM and, after
// opts.Grace, SIGKILL. When the child exits, whatever it left behind in its
// tree (a background grandchild) is stopped too, and Run returns once the
// output pipes are drained or the remnants had orphanGrace to let go of
// them; a remnant still alive by then is killed. An error is returned only
// when the child could not be started.
func Run(ctx context.Context, cmd *exec.Cmd, opts RunOptions) (RunResult, error) {
	if cmd == nil || cmd.Path == "" {
		return RunResult{}, ErrNoCommand
	}
	if cmd.Stdout != nil || cmd.Stderr != nil {
		return RunResult{}, errors.New("stdiohost: Run owns cmd's stdout and stderr")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return RunResult{}, fmt.Errorf("stdiohost: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return RunResult{}, fmt.Errorf("stdiohost: stderr pipe: %w", err)
	}
	closeAll := func() {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var t tree
	t.prepare(cmd)
	if err := startChild(cmd); err != nil {
		closeAll()
		return RunResult{}, fmt.Errorf("stdiohost: start %s: %w", cmd.Path, err)
	}
	if err := t.attach(cmd); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		forgetChild(cmd.Process.Pid)
		t.release()
		closeAll()
		return RunResult{}, err
	}
	outW.Close()
	errW.Close()

	var readers sync.WaitGroup
	readers.Go(func() { drainTo(opts.Stdout, outR) })
	readers.Go(func() { drainTo(opts.Stderr, errR) })
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		forgetChild(cmd.Process.Pid)
		exited <- err
	}()

	var res RunResult
	select {
	case res.Err = <-exited:
	case <-ctx.Done():
		res.Stopped = true
		t.stop()
		timer := time.NewTimer(orDefault(opts.Grace, 2*time.Second))
		select {
		case res.Err = <-exited:
		case <-timer.C:
			t.kill()
			res.Err = <-exited
		}
		timer.Stop()
	}
	res.ExitCode = cmd.ProcessState.ExitCode()

	// The leader is gone; a descendant may live on and hold the pipes open
	// (the "no orphans" rule: nothing a tool started outlives its call).
	t.stop()
	deadline := time.Now().Add(orphanGrace)
	_ = outR.SetReadDeadline(deadline)
	_ = errR.SetReadDeadline(deadline)
	readers.Wait()
	t.kill()
	t.release()
	outR.Close()
	errR.Close()
	return res, nil
}

// drainTo copies r to w until r ends; a failing w makes the rest be
// discarded, never blocks the child.
func drainTo(w io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}
