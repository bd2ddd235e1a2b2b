// Command echo is the benchmark's stdio MCP server: newline-delimited
// JSON-RPC on stdin/stdout, both eras (server/discover and initialize),
// tools/list, and tools/call of "echo" {size, progress, delayMs}: it answers
// with size bytes of text, after `progress` notifications/progress spaced
// delayMs apart when the request has _meta.progressToken.
//
// Requests without progress are answered inline, in arrival order, and the
// output is flushed whenever no more input is buffered, so a pipelining
// client gets batched writes. Requests with progress run in their own
// goroutine, so any number can be in flight. It exits on stdin EOF.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/echoproto"
)

type output struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *output) write(msg []byte, flush bool) { o.write2(msg, nil, flush) }

// write2 writes msg followed by more as one line. A large piece bypasses
// the buffer (bufio writes it straight through), so it is not copied.
func (o *output) write2(msg, more []byte, flush bool) {
	o.mu.Lock()
	o.w.Write(msg)
	o.w.Write(more)
	o.w.WriteByte('\n')
	if flush {
		o.w.Flush()
	}
	o.mu.Unlock()
}

func (o *output) flush() {
	o.mu.Lock()
	o.w.Flush()
	o.mu.Unlock()
}

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help") {
		fmt.Fprintln(os.Stderr, "usage: echo  (a stdio MCP server for benchmarks; see the package doc)")
		return
	}
	in := bufio.NewReaderSize(os.Stdin, 256<<10)
	out := &output{w: bufio.NewWriterSize(os.Stdout, 256<<10)}
	var (
		req  echoproto.Request
		buf  []byte
		long []byte
		wg   sync.WaitGroup
	)
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 && len(trim(line)) > 0 {
			if perr := req.Parse(trim(line)); perr != nil {
				buf = append(buf[:0], `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`...)
				out.write(buf, false)
			} else if req.WantsProgress() {
				r := req
				r.ID = append([]byte(nil), req.ID...)
				r.Params.Meta.ProgressToken = append([]byte(nil), req.Params.Meta.ProgressToken...)
				wg.Go(func() { slow(out, &r) })
			} else if req.IsEcho() {
				head, tail := req.EchoParts(buf[:0])
				buf = head
				out.write2(head, tail, false)
			} else if msg, ok := req.Answer(buf[:0]); ok {
				buf = msg
				out.write(buf, false)
				if cap(buf) > 1<<20 {
					buf = nil
				}
			}
			if cap(long) > 1<<20 {
				long = nil
			}
		}
		if in.Buffered() == 0 || err != nil {
			out.flush()
		}
		if err != nil {
			if err != io.EOF {
				fmt.Fprintln(os.Stderr, "echo: reading stdin:", err)
			}
			break
		}
	}
	wg.Wait()
	out.flush()
}

// slow answers a request after its progress notifications.
func slow(out *output, r *echoproto.Request) {
	var buf []byte
	d := r.Delay()
	for i := 1; i <= r.Params.Arguments.Progress; i++ {
		if d > 0 {
			time.Sleep(d)
		}
		buf = r.Progress(buf[:0], i)
		out.write(buf, true)
	}
	if r.IsEcho() {
		head, tail := r.EchoParts(buf[:0])
		out.write2(head, tail, true)
		return
	}
	buf, _ = r.Answer(buf[:0])
	out.write(buf, true)
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
