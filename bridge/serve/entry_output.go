package serve

// The output of an in-process session: what the session writes for one
// Conn's request, handed to Recv message by message with the parse the
// child's reader made (no SSE framing to write and read back).

import (
	"bytes"
	"net/http"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/child"
	"github.com/mcp-bridge/mcp-bridge/bridge/stream"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// An entryMsg is a message for Recv: its bytes, and their parse when one
// was made on the way (the child's reader's), so that Recv need not
// parse them again.
type entryMsg struct {
	raw []byte
	m   *wire.Message // nil: Recv parses raw
}

// entryKey is the request context key of the entryWriter an in-process
// request is answered through (entryOf).
type entryKey struct{}

// entryOf returns the entryWriter r is answered through, or nil for an
// HTTP request.
func entryOf(r *http.Request) *entryWriter {
	w, _ := r.Context().Value(entryKey{}).(*entryWriter)
	return w
}

// entryConn returns the Conn r comes from, or nil for an HTTP request
// (a session's initialize: session.entry).
func entryConn(r *http.Request) *Conn {
	if w := entryOf(r); w != nil {
		return w.c
	}
	return nil
}

// entryOf returns the entryWriter of r, a request of s, when s's client
// is in this process; one field to test on an HTTP client's requests.
func (s *session) entryOf(r *http.Request) *entryWriter {
	if s.entry == nil {
		return nil
	}
	return entryOf(r)
}

// push pushes msg, a message the session routes (route), to sk; with its
// parse pm when sk is a stream the Conn is reading (entryWriter.pump).
func (s *session) push(sk *stream.Sink, msg []byte, pm *wire.Message) bool {
	if pm != nil {
		if w := s.entry.outFor(sk); w != nil {
			return w.pushParsed(msg, pm, false)
		}
	}
	return sk.Push(msg, false)
}

// outFor returns the entryWriter pumping sk to the Conn, or nil.
func (c *Conn) outFor(sk *stream.Sink) *entryWriter {
	c.omu.Lock()
	defer c.omu.Unlock()
	return c.outs[sk]
}

// maxParsed bounds the parses an entryWriter keeps for messages queued in
// its stream: past it (a flood of progress a slow reader has not taken)
// messages go without, and Recv parses them.
const maxParsed = 2 * maxEntryQueue

// An entryWriter answers one in-process request. A stream of the session
// (a call's answers, the standalone stream) is handed to the Conn message
// by message (stream.PumpDirect: no SSE framing to write and read back);
// what is written to it as an HTTP response is a JSON body (an answer the
// session makes itself, a refusal), handed on once the handler has
// returned (finish).
type entryWriter struct {
	c      *Conn
	hdr    http.Header
	status int
	buf    []byte // the JSON body
	drop   bool   // hand nothing on

	// The parses of messages a call delivered to the stream's sink (out),
	// in the sink's order: each message the pump takes is either the
	// first of them, or one the session pushed itself (no parse).
	mu     sync.Mutex
	sk     *stream.Sink
	parsed []*wire.Message
}

func newEntryWriter(c *Conn) *entryWriter {
	return &entryWriter{c: c, hdr: http.Header{}}
}

func (w *entryWriter) Header() http.Header { return w.hdr }

func (w *entryWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *entryWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush is http.Flusher's: nothing is held back.
func (w *entryWriter) Flush() {}

// out makes w the output of cl, whose messages go to sk (the session's
// requestWith): the child's reader delivers each with its parse, which
// the pump hands on with it.
func (w *entryWriter) out(cl *child.Call, sk *stream.Sink) {
	w.sk = sk
	cl.DeliverFn = w.push
}

// push is a call's deliverFn: sk.Push, keeping m for the pump. It runs on
// the child's reader goroutine and never blocks.
func (w *entryWriter) push(msg []byte, m *wire.Message, final bool) { w.pushParsed(msg, m, final) }

// pushParsed pushes msg to the stream, keeping its parse m (if any) for
// the pump; it reports what sk.Push does.
func (w *entryWriter) pushParsed(msg []byte, m *wire.Message, final bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock() // held across Push: parsed stays in the sink's order
	keep := m != nil && m.Kind != wire.KindInvalid && len(w.parsed) < maxParsed
	if keep {
		w.parsed = append(w.parsed, m)
	}
	ok := w.sk.Push(msg, final)
	if !ok && keep {
		w.parsed = w.parsed[:len(w.parsed)-1]
	}
	return ok
}

// parseOf returns the parse push kept for msg, or nil.
func (w *entryWriter) parseOf(msg []byte) *wire.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.parsed) == 0 {
		return nil
	}
	m := w.parsed[0]
	if len(m.Raw) != len(msg) || len(msg) == 0 || &m.Raw[0] != &msg[0] {
		return nil // pushed by the session itself
	}
	w.parsed[0] = nil
	w.parsed = w.parsed[1:]
	return m
}

// pump hands sk, a stream of the session, to the Conn until it ends
// (stream.PumpDirect). The stream is this request's answer: it is one
// with status 200, and names the session, as an SSE response does.
func (w *entryWriter) pump(r *http.Request, head func(int), sid string, sk *stream.Sink, stop, stop2 <-chan struct{}) stream.PumpResult {
	w.hdr[keySessionID] = []string{sid}
	head(http.StatusOK)
	// What the session routes to sk from now on (its server requests,
	// notifications) comes with its parse too (session.push).
	w.mu.Lock()
	w.sk = sk
	w.mu.Unlock()
	c := w.c
	c.omu.Lock()
	c.outs[sk] = w
	c.omu.Unlock()
	defer func() {
		c.omu.Lock()
		delete(c.outs, sk)
		c.omu.Unlock()
	}()
	return stream.PumpDirect(r.Context(), sk, stop, stop2, func(msg []byte, abort <-chan struct{}) error {
		if w.drop {
			return nil
		}
		return w.c.deliver(msg, w.parseOf(msg), abort)
	})
}

// finish hands on the JSON response to a request once the handler has
// returned: the answer, or the JSON-RPC error of a refusal.
func (w *entryWriter) finish() {
	if w.drop {
		return
	}
	if body := bytes.TrimSpace(w.buf); len(body) > 0 {
		w.c.deliver(body, nil, nil) // w.buf is this response's own
	}
}
