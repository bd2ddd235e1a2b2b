//go:build linux

package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// StdioCaller talks newline-delimited JSON-RPC to a child process over
// pipes. Any number of calls can be in flight: a single reader goroutine
// matches responses to callers by id and progress notifications by
// progress token (the token is the request id).
type StdioCaller struct {
	Legacy bool

	proc *Proc // nil for an HTTP+SSE stream (sse.go)
	in   io.Closer
	// post, if set, sends each message instead of the pipe (HTTP+SSE:
	// a POST to the endpoint's URL); sse: the lines read are SSE, and a
	// message is a "data: " line.
	post func(msg []byte) error
	sse  bool

	wmu sync.Mutex
	w   *bufio.Writer

	mu      sync.Mutex
	pending map[int64]*stdioCall
	readErr error
	done    chan struct{}
	ids     atomic.Int64
}

type stdioCall struct {
	ch       chan []byte // the final response
	progress atomic.Int32
}

// StartStdio starts argv with pipes for stdin and stdout (stderr goes to
// logPath, if set) and its reader.
func StartStdio(argv, env []string, logPath string, legacy bool) (*StdioCaller, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := startProc(cmd, logPath, false)
	if err != nil {
		return nil, err
	}
	c := &StdioCaller{
		Legacy:  legacy,
		proc:    p,
		in:      stdin,
		w:       bufio.NewWriterSize(stdin, 64<<10),
		pending: map[int64]*stdioCall{},
		done:    make(chan struct{}),
	}
	go c.read(stdout)
	return c, nil
}

// Proc is the child process.
func (c *StdioCaller) Proc() *Proc { return c.proc }

func (c *StdioCaller) send(msg []byte) error {
	if c.post != nil {
		return c.post(msg)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(msg)
	c.w.WriteByte('\n')
	return c.w.Flush()
}

func (c *StdioCaller) read(stdout io.Reader) {
	r, ok := stdout.(*bufio.Reader)
	if !ok {
		r = bufio.NewReaderSize(stdout, 256<<10)
	}
	var (
		err     error
		scratch []byte
	)
	for {
		var line []byte
		line, err = readLine(r, &scratch)
		if err != nil {
			break
		}
		if c.sse {
			line = bytes.TrimPrefix(line, []byte("data: "))
		}
		if len(line) == 0 {
			continue
		}
		t, serr := scanTop(line)
		if serr != nil {
			continue // not JSON: a bridge that logs to stdout
		}
		switch {
		case t.method.ok() && t.id.ok():
			// A request from the server (ping, ...): answer it empty.
			c.send(append(append([]byte(`{"jsonrpc":"2.0","id":`), t.get(line, t.id)...), `,"result":{}}`...))
		case t.methodIs(line, "notifications/progress"):
			if tok := progressToken(t.get(line, t.params)); tok >= 0 {
				c.mu.Lock()
				pc := c.pending[tok]
				c.mu.Unlock()
				if pc != nil {
					pc.progress.Add(1)
				}
			}
		case t.id.ok():
			id, ok := idInt(t.get(line, t.id))
			if !ok {
				continue
			}
			c.mu.Lock()
			pc := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if pc != nil {
				b := getBuf(len(line))
				copy(b, line)
				pc.ch <- b
			}
		}
	}
	c.mu.Lock()
	if err == io.EOF {
		err = errors.New("the child closed its stdout")
	}
	c.readErr = err
	c.mu.Unlock()
	close(c.done)
}

func (c *StdioCaller) roundTrip(ctx context.Context, id int64, msg []byte) (*stdioCall, []byte, error) {
	pc := &stdioCall{ch: make(chan []byte, 1)}
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return pc, nil, c.readErr
	}
	c.pending[id] = pc
	c.mu.Unlock()
	if err := c.send(msg); err != nil {
		c.forget(id)
		return pc, nil, err
	}
	select {
	case resp := <-pc.ch:
		return pc, resp, nil
	case <-ctx.Done():
		c.forget(id)
		return pc, nil, ctx.Err()
	case <-c.done:
		c.forget(id)
		c.mu.Lock()
		err := c.readErr
		c.mu.Unlock()
		return pc, nil, err
	}
}

func (c *StdioCaller) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Setup sends initialize and notifications/initialized in legacy mode.
func (c *StdioCaller) Setup(ctx context.Context) error {
	if !c.Legacy {
		return nil
	}
	id := c.ids.Add(1)
	_, resp, err := c.roundTrip(ctx, id, initializeRequest(id))
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	t, err := scanTop(resp)
	if err != nil {
		return err
	}
	if t.err.ok() {
		return fmt.Errorf("initialize: %w", rpcError(t.get(resp, t.err)))
	}
	return c.send([]byte(initializedNotification))
}

// Call sends one tools/call.
func (c *StdioCaller) Call(ctx context.Context, s Spec) (Outcome, error) {
	id := c.ids.Add(1)
	msg := appendCall(make([]byte, 0, 320), id, s, !c.Legacy)
	pc, resp, err := c.roundTrip(ctx, id, msg)
	progress := int(pc.progress.Load())
	if err != nil {
		return Outcome{Progress: progress}, err
	}
	out, err := checkFinal(resp, len(resp), progress, s)
	putBuf(resp)
	return out, err
}

// Close closes the child's stdin and stops it (SIGTERM, then SIGKILL, to
// its whole process group) if it does not exit within grace.
func (c *StdioCaller) Close() error {
	c.in.Close()
	if c.proc == nil {
		<-c.done
		return nil
	}
	c.proc.Wait(3 * time.Second)
	return c.proc.Stop(2 * time.Second)
}
