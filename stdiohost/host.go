package stdiohost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// Options configure a Host. The zero value is usable.
type Options struct {
	// OnMessage receives each line the child writes to stdout, without its
	// newline. It runs on the Host's single reader goroutine, so it must not
	// block for long, and msg is only valid during the call: copy it to keep
	// it. If nil, messages are discarded.
	OnMessage func(msg []byte)

	// OnBadLine is told about a stdout line that could not be delivered, such
	// as one longer than MaxMessageSize (a *lineio.TooLongError). The line is
	// skipped and reading goes on. If nil, the error is logged.
	OnBadLine func(err error)

	// MaxMessageSize limits one stdout line. If zero, lineio's default
	// (32 MiB) applies.
	MaxMessageSize int

	// TerminateDelay is how long Close waits after closing stdin before it
	// sends SIGTERM, and again after SIGTERM before SIGKILL. If zero, 2s,
	// the delays the TypeScript SDK uses.
	TerminateDelay time.Duration

	// WriteTimeout bounds every write to the child's stdin. Past it the
	// child is taken for hung: its process group is killed and Send returns
	// ErrHung. If zero or negative, writes have no deadline.
	WriteTimeout time.Duration

	// Logger receives the child's stderr lines (at info level, one record per
	// line) and lifecycle events. The zero value discards them.
	Logger zerolog.Logger

	// OnExit, if set, is called once when the process has exited (before
	// Exited is closed), e.g. to keep a count of running children.
	OnExit func()

	// Throwaway marks a process the caller runs only to ask it something
	// (an era probe): its exit is logged at debug level, since it is no
	// child of the bridge's, unless Keep adopts it first.
	Throwaway bool

	// Watch, if set, is told of the child's exit and reports a crash loop
	// (CrashWatch); while one is reported, the child's stderr is logged at
	// debug level.
	Watch *CrashWatch
}

// orphanGrace is how long the remnants of a process group get, after the
// group leader exited, between SIGTERM and SIGKILL, and how long the stdout
// reader keeps draining a pipe that a lingering grandchild holds open.
const orphanGrace = 500 * time.Millisecond

// A Host is a running child process. Its methods are safe for concurrent use.
type Host struct {
	cmd     *exec.Cmd
	tree    tree // the child's process group (Unix) or job (Windows)
	opts    Options
	log     zerolog.Logger
	started time.Time

	stdin  *os.File
	stdout *os.File
	stderr *os.File
	w      *lineio.Writer

	exited chan struct{} // closed when the process has been waited for
	done   chan struct{} // closed when every goroutine has finished
	err    error         // exit error; written before exited is closed

	hung atomic.Bool // killed for a write timeout

	throwaway atomic.Bool // Options.Throwaway until Keep
	stopping  atomic.Bool // Close began: an exit from now on is ours
	answered  atomic.Bool // it wrote a message on stdout
	stderr0   tail        // the end of its stderr, for a crash-loop report

	// cancel ends a StartFunc Host's run (inproc.go); nil for a process.
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// Start starts cmd as an MCP stdio server. It must be a fresh *exec.Cmd whose
// Stdin, Stdout and Stderr are unset: the Host owns all three. The command
// runs in a new process group (Unix) or Job Object (Windows) with its
// descendants; on Linux it also receives SIGKILL if the bridge dies without
// cleaning up, and on Windows the whole job dies with the bridge.
//
// The caller must call Close when done with the Host, even after the child
// has exited, to release its goroutines.
func Start(cmd *exec.Cmd, opts Options) (*Host, error) {
	if cmd == nil || cmd.Path == "" {
		return nil, ErrNoCommand
	}
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("stdiohost: cmd stdio must be unset")
	}
	h := &Host{
		cmd:    cmd,
		opts:   opts,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	h.throwaway.Store(opts.Throwaway)
	var (
		childIn, childOut, childErr *os.File
		err                         error
	)
	closeAll := func() {
		for _, f := range []*os.File{childIn, childOut, childErr, h.stdin, h.stdout, h.stderr} {
			if f != nil {
				f.Close()
			}
		}
	}
	if childIn, h.stdin, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdiohost: stdin pipe: %w", err)
	}
	if h.stdout, childOut, err = os.Pipe(); err != nil {
		closeAll()
		return nil, fmt.Errorf("stdiohost: stdout pipe: %w", err)
	}
	growPipe(h.stdout)
	if h.stderr, childErr, err = os.Pipe(); err != nil {
		closeAll()
		return nil, fmt.Errorf("stdiohost: stderr pipe: %w", err)
	}
	// Handing *os.File values to exec means no copying goroutines inside
	// exec: Wait returns when the process exits, and the pipes stay ours.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, childErr
	h.tree.prepare(cmd)
	if err := startChild(cmd); err != nil {
		closeAll()
		return nil, fmt.Errorf("stdiohost: start %s: %w", cmd.Path, err)
	}
	if err := h.tree.attach(cmd); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		forgetChild(cmd.Process.Pid)
		h.tree.release()
		closeAll()
		return nil, err
	}
	childIn.Close()
	childOut.Close()
	childErr.Close()
	h.started = time.Now()
	h.log = opts.Logger.With().Int("child_pid", cmd.Process.Pid).Logger()
	if opts.WriteTimeout > 0 {
		h.w = lineio.NewWriter(deadlineWriter{h.stdin, opts.WriteTimeout})
	} else {
		h.w = lineio.NewWriter(h.stdin)
	}

	var readers sync.WaitGroup
	readers.Go(h.readStdout)
	readers.Go(h.readStderr)
	go func() {
		uptime, stopped := h.wait(&readers)
		h.opts.Watch.exited(uptime, stopped, h.answered.Load(), h.err, h.stderr0.String())
		close(h.done)
	}()
	h.log.Debug().Strs("argv", cmd.Args).Msg("child started")
	return h, nil
}

// Keep makes a Throwaway Host an ordinary child: its exit is logged as one.
func (h *Host) Keep() { h.throwaway.Store(false) }

// logExit logs the end of the process: at debug level for a throwaway one
// or during a reported crash loop, at warn for an error, else at info.
// Durations name their unit (uptime_ms).
func (h *Host) logExit(err error, msg string) {
	ev := h.log.Info()
	switch {
	case h.throwaway.Load():
		ev, msg = h.log.Debug(), "probe process exited"
	case h.opts.Watch.Quiet():
		ev = h.log.Debug()
	case err != nil && !(h.stopping.Load() && stoppedByUs(err)):
		ev = h.log.Warn()
	}
	if err != nil {
		ev = ev.Err(err)
	}
	ev.Int64("uptime_ms", time.Since(h.started).Milliseconds()).Msg(msg)
}

// Pid returns the child's process id (on Unix also its process group id).
// An in-process Host (StartFunc) has none: 0.
func (h *Host) Pid() int {
	if h.cmd == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// Started returns when the child was started.
func (h *Host) Started() time.Time { return h.started }

// Send writes one message to the child's stdin, followed by a newline. It
// returns ErrClosed once stdin is closed and lineio.ErrEmbeddedNewline for a
// message that contains a newline. Send blocks while the pipe is full, at
// most Options.WriteTimeout; past it the child is killed and Send returns
// ErrHung.
func (h *Host) Send(msg []byte) error {
	select {
	case <-h.exited:
		return ErrClosed
	default:
	}
	if err := h.w.Write(msg); err != nil {
		if errors.Is(err, lineio.ErrEmbeddedNewline) {
			return err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || h.hung.Load() {
			h.hang()
			return ErrHung
		}
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// Exited is closed as soon as the child process has exited. Its stdout may
// still be draining; wait for Done before treating the stream as finished.
func (h *Host) Exited() <-chan struct{} { return h.exited }

// Done is closed when the child has exited and its stdout and stderr have
// been read to the end: no further OnMessage calls will happen.
func (h *Host) Done() <-chan struct{} { return h.done }

// Err reports why the child exited: nil for exit status 0, an
// *exec.ExitError otherwise. It is meaningful only after Exited is closed.
func (h *Host) Err() error {
	select {
	case <-h.exited:
		return h.err
	default:
		return nil
	}
}

func (h *Host) readStdout() {
	r := lineio.NewReader(h.stdout, h.opts.MaxMessageSize)
	for {
		msg, err := r.Read()
		if err == nil {
			h.answered.Store(true)
			if h.opts.OnMessage != nil {
				h.opts.OnMessage(msg)
			}
			continue
		}
		if errors.Is(err, lineio.ErrTooLong) {
			if h.opts.OnBadLine != nil {
				h.opts.OnBadLine(err)
			} else {
				h.log.Warn().Err(err).Msg("child stdout line skipped")
			}
			continue
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
			h.log.Debug().Err(err).Msg("child stdout ended")
		}
		h.stdout.Close()
		return
	}
}

func (h *Host) readStderr() {
	br := bufio.NewReaderSize(h.stderr, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == nil {
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
		}
		if len(line) > 0 {
			h.stderr0.add(line)
			ev := h.log.Info()
			if h.opts.Watch.Quiet() {
				ev = h.log.Debug() // a reported crash loop: said once already
			}
			if h.throwaway.Load() {
				ev = ev.Bool("probe", true) // not (yet) a child of the bridge's
			}
			ev.Bytes("stderr", line).Msg("child")
		}
		// A full buffer is no error: the rest of a long line comes as
		// another record.
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			h.stderr.Close()
			return
		}
	}
}

// wait reaps the child and ends its readers. It returns the child's uptime
// and whether Close had begun, both taken
// when the process was reaped: draining its pipes afterwards can take a
// while on a loaded machine, and a Close that comes meanwhile (an era probe
// closing the sibling it saw die) did not stop it.
func (h *Host) wait(readers *sync.WaitGroup) (time.Duration, bool) {
	err := h.cmd.Wait()
	uptime, stopped := time.Since(h.started), h.stopping.Load()
	forgetChild(h.cmd.Process.Pid)
	h.err = err
	if h.opts.OnExit != nil {
		h.opts.OnExit()
	}
	close(h.exited)
	h.logExit(err, "child exited")

	// The leader is gone, but its descendants may live on and keep the
	// stdout/stderr pipes open, which would hide the exit from the readers.
	// Take the group down and stop waiting for the pipes after a grace
	// period (the read deadline ends both readers), so that in-flight
	// requests fail promptly.
	h.tree.stop()
	deadline := time.Now().Add(orphanGrace)
	_ = h.stdout.SetReadDeadline(deadline)
	_ = h.stderr.SetReadDeadline(deadline)
	_ = h.stdin.Close()
	readers.Wait()
	h.tree.kill()
	h.tree.release()
	return uptime, stopped
}

// Close shuts the child down and waits for the Host's goroutines. It closes
// the child's stdin, waits up to TerminateDelay for it to exit, sends SIGTERM
// to its process group, waits again, then sends SIGKILL (on Windows, where
// there is no SIGTERM, it terminates the job after the first wait). It is
// idempotent
// and returns the child's exit error, except that exits caused by Close's own
// signals are not reported as errors.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		if h.cancel != nil {
			h.closeFunc()
			return
		}
		h.stopping.Store(true)
		delay := orDefault(h.opts.TerminateDelay, 2*time.Second)
		// 2026-07-28 stdio §Shutdown: "the client SHOULD initiate shutdown by
		// closing the input stream to the child process", then SIGTERM, then
		// SIGKILL if it does not exit within a reasonable time. wait may
		// close stdin too: closing an *os.File twice is safe, the second
		// call only reports os.ErrClosed.
		_ = h.stdin.Close()
		signalled := false
		if !h.waitExit(delay) {
			signalled = true
			h.log.Debug().Msg("child ignored stdin close; sending SIGTERM")
			h.tree.stop()
			if !h.waitExit(delay) {
				h.log.Warn().Msg("child ignored SIGTERM; sending SIGKILL")
				h.tree.kill()
				<-h.exited
			}
		}
		<-h.done
		if err := h.err; err != nil && !(signalled && stoppedByUs(err)) {
			h.closeErr = err
		}
	})
	return h.closeErr
}

func (h *Host) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.exited:
		return true
	case <-t.C:
		return false
	}
}
