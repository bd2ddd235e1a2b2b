package exec

import (
	"bytes"
	"context"
	osexec "os/exec"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// A capture keeps the first max bytes of a stream and counts the rest:
// however much a program writes, exec holds at most max bytes of it (the
// buffer grows by doubling, capped at max).
type capture struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
	lines int64
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	if room := c.max - len(c.buf); room > 0 {
		take := p[:min(room, len(p))]
		if need := len(c.buf) + len(take); need > cap(c.buf) {
			nb := make([]byte, len(c.buf), min(c.max, max(need, 2*cap(c.buf), 4096)))
			copy(nb, c.buf)
			c.buf = nb
		}
		c.buf = append(c.buf, take...)
	}
	return len(p), nil
}

func (c *capture) truncated() bool { return c.total > int64(len(c.buf)) }

func (c *capture) progress() (lines, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines, c.total
}

// An outcome is how one execution went.
type outcome struct {
	argv      []string
	exitCode  int
	stdout    *capture
	stderr    *capture
	duration  time.Duration
	timedOut  bool
	cancelled bool // the client cancelled: nothing is answered
	startErr  error
}

// run executes the tool with argv (after the program) under its timeout,
// cancellation, output caps and concurrency bound. progress, when not
// nil, is called about once a second while output grows.
func (t *Tool) run(ctx context.Context, argv []string, progress func(lines, bytes int64)) outcome {
	o := outcome{argv: argv, exitCode: -1, stdout: &capture{max: t.MaxOutput}, stderr: &capture{max: t.MaxOutput}}
	select {
	case t.slots <- struct{}{}:
		defer func() { <-t.slots }()
	case <-ctx.Done():
		o.cancelled = true
		return o
	}
	tctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	// Built by hand rather than with exec.Command, which would look the
	// program up again; Env is never nil, which would mean "inherit
	// everything".
	cmd := &osexec.Cmd{Path: t.Command, Args: append([]string{t.Command}, argv...), Env: append([]string{}, t.Env...), Dir: t.Cwd}

	done := make(chan struct{})
	var wg sync.WaitGroup
	if progress != nil {
		wg.Go(func() { reportProgress(done, o.stdout, o.stderr, progress) })
	}
	start := time.Now()
	res, err := stdiohost.Run(tctx, cmd, stdiohost.RunOptions{Stdout: o.stdout, Stderr: o.stderr, Grace: t.Grace})
	o.duration = time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		o.startErr = err
		return o
	}
	o.exitCode = res.ExitCode
	switch {
	case ctx.Err() != nil:
		o.cancelled = true
	case res.Stopped:
		o.timedOut = true
	}
	return o
}

// reportProgress calls report once a second while the output grows; the
// progress value is the number of output lines (bytes when there are
// none), which only increases, as notifications/progress requires.
func reportProgress(done <-chan struct{}, out, errc *capture, report func(lines, bytes int64)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			l1, b1 := out.progress()
			l2, b2 := errc.progress()
			if b := b1 + b2; b > last {
				last = b
				report(l1+l2, b)
			}
		}
	}
}
