package stdiohost

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// A RunFunc is an MCP stdio server written in Go: it reads messages from
// stdin and writes them to stdout until stdin ends or ctx is done, and
// must return then (its own goroutines ended or ending).
type RunFunc func(ctx context.Context, stdin io.Reader, stdout io.Writer) error

// StartFunc runs run as an in-process "child": a goroutine connected by
// pipes, so that everything built for a child process (framing, the
// write timeout, OnMessage, Close, a Supervisor) works unchanged. The Host
// has no process: Pid returns 0, and there is no stderr (run logs
// through its own logger).
//
// Close closes run's stdin, waits up to TerminateDelay for run to return,
// then cancels ctx and waits for it; a write timeout (Options.WriteTimeout)
// cancels ctx too.
func StartFunc(run RunFunc, opts Options) (*Host, error) {
	if run == nil {
		return nil, ErrNoCommand
	}
	childIn, hostIn, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	hostOut, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		hostIn.Close()
		return nil, err
	}
	growPipe(hostOut)
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		opts:    opts,
		stdin:   hostIn,
		stdout:  hostOut,
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		cancel:  cancel,
		started: time.Now(),
		log:     opts.Logger.With().Bool("in_process", true).Logger(),
	}
	h.throwaway.Store(opts.Throwaway)
	if opts.WriteTimeout > 0 {
		h.w = lineio.NewWriter(deadlineWriter{h.stdin, opts.WriteTimeout})
	} else {
		h.w = lineio.NewWriter(h.stdin)
	}
	var readers sync.WaitGroup
	readers.Go(h.readStdout)
	go func() {
		err := run(ctx, childIn, childOut)
		// Closing run's ends ends the host's reader (EOF) and unblocks any
		// goroutine of run's still reading its stdin.
		childOut.Close()
		childIn.Close()
		h.err = err
		if opts.OnExit != nil {
			opts.OnExit()
		}
		close(h.exited)
		if errors.Is(err, context.Canceled) {
			h.logExit(nil, "in-process server ended")
		} else {
			h.logExit(err, "in-process server ended")
		}
		_ = h.stdin.Close()
		readers.Wait()
		cancel()
		close(h.done)
	}()
	h.log.Debug().Msg("in-process server started")
	return h, nil
}

// closeFunc is Close for a StartFunc Host: stdin closed, TerminateDelay,
// then ctx cancelled; run is always joined.
func (h *Host) closeFunc() {
	h.stopping.Store(true)
	delay := orDefault(h.opts.TerminateDelay, 2*time.Second)
	_ = h.stdin.Close()
	cancelled := false
	if !h.waitExit(delay) {
		cancelled = true
		h.log.Debug().Msg("in-process server ignored stdin close; cancelling it")
		h.cancel()
		<-h.exited
	}
	<-h.done
	if err := h.err; err != nil && !(cancelled && errors.Is(err, context.Canceled)) {
		h.closeErr = err
	}
}
