package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// ErrServerGone reports a request routed to a downstream that has ended.
var ErrServerGone = errors.New("aggregate: server is not running")

// A downstream is one server dialed for a session.
type downstream struct {
	s        *session
	name     string
	noPrefix bool // Server.NoPrefix
	idx      int  // its place in Config.Servers
	log      zerolog.Logger

	out       io.ReadCloser // its stdout; nil for a Conn
	in        io.WriteCloser
	conn      Conn // Server.Open's; nil for Dial's streams
	inOnce    sync.Once
	closeWait func() error
	w         *lineio.Writer // to its stdin
	queue     chan []byte    // messages for writeLoop
	gone      chan struct{}  // closed when its reader has ended

	// From its initialize result; set before it is routable.
	caps         capabilities
	instructions string
	// Set before it is routable: rank is its place among the routable
	// servers (the tie-breaker); late, whether it joined after the client's
	// initialize was answered.
	rank int
	late bool
	// removed: closed because SetServers took it out, not ended on its own.
	removed atomic.Bool
	// left: its end has been handled (downstreamGone); publish may drop it.
	left atomic.Bool

	// Until it is opened (see open), its requests and notifications are
	// held, in order, so that nothing of a late server precedes the
	// client's initialize answer. order serializes handling them.
	order     sync.Mutex
	opened    bool
	held      [][]byte
	heldBytes int

	mu      sync.Mutex
	err     error // why it is gone
	nextID  int64 // ids and progress tokens minted for it
	pending map[int64]chan *wire.Message
	tokens  map[int64][]byte // our progress token -> the client's
	relayed map[string]int64 // its id of a relayed request -> ours
}

type capabilities struct {
	tools, prompts, resources, subscribe, logging, completions bool
	tasks                                                      taskCaps // tasks.go
	// extensions: capabilities.extensions, by identifier (see apps.go).
	extensions map[string]json.RawMessage
}

// has reports whether the server lists k.
func (c capabilities) has(k kind) bool {
	switch k {
	case kindTools:
		return c.tools
	case kindPrompts:
		return c.prompts
	}
	return c.resources
}

func readCapabilities(m *wire.Message) capabilities {
	cs, _ := wire.Field(m.Raw, m.Result, "capabilities")
	object := func(in wire.Span, key string) (wire.Span, bool) {
		sp, ok := wire.Field(m.Raw, in, key)
		return sp, ok && m.Raw[sp.Start] == '{'
	}
	var c capabilities
	_, c.tools = object(cs, "tools")
	_, c.prompts = object(cs, "prompts")
	var rs wire.Span
	rs, c.resources = object(cs, "resources")
	if sub, ok := wire.Field(m.Raw, rs, "subscribe"); ok {
		c.subscribe = string(m.Bytes(sub)) == "true"
	}
	_, c.logging = object(cs, "logging")
	_, c.completions = object(cs, "completions")
	c.tasks = readTaskCaps(m, cs)
	return c
}

// dial starts server i and registers it with the session; its reader runs
// from then on.
func (s *session) dial(i int) (*downstream, error) {
	srv := s.server(i)
	d := &downstream{
		s: s, name: srv.Name, noPrefix: srv.NoPrefix, idx: i,
		log:     s.log.With().Str("server", srv.Name).Logger(),
		queue:   make(chan []byte, maxQueued),
		gone:    make(chan struct{}),
		pending: map[int64]chan *wire.Message{},
		tokens:  map[int64][]byte{},
		relayed: map[string]int64{},
	}
	var err error
	if srv.Open != nil {
		d.conn, err = srv.Open(s.ctx)
	} else {
		d.out, d.in, d.closeWait, err = srv.Dial(s.ctx)
		if err == nil {
			d.w = lineio.NewWriter(d.in)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("aggregate: starting %q: %w", srv.Name, err)
	}
	s.mu.Lock()
	closing := s.closing
	s.all = append(s.all, d)
	s.mu.Unlock()
	if closing {
		d.closeInput() // shutdown has passed the point where it closes inputs
	}
	// dial runs on a joiner, and shutdown joins the joiners before it
	// closes readers and writers: both accept.
	s.readers.Go(d.read)
	s.writers.Go(d.writeLoop)
	return d, nil
}

// post queues a message for the server without waiting: the readers of
// the client's and the servers' streams never block on a server that
// does not read its input (its reader would then never read the output
// it is blocked writing, and the client's reader would stall every other
// server). A server that leaves maxQueued messages unread loses the next
// ones, with a warning.
func (d *downstream) post(msg []byte) {
	select {
	case d.queue <- msg:
	default:
		d.s.warn.Warn(d.log, "server-queue-full").Msg("aggregate: a server is not reading its input; a message to it was dropped")
	}
}

// writeLoop writes what post queued, until shutdown closes the queue.
func (d *downstream) writeLoop() {
	for msg := range d.queue {
		d.write(msg) // a failure is the server going, which its reader reports
	}
}

// closeInput closes the server's stdin (once: shutdown, a failed start
// and the close of a session may each ask), which tells a stdio server to
// exit and fails a write blocked on it.
func (d *downstream) closeInput() {
	d.inOnce.Do(func() {
		if d.conn != nil {
			d.conn.Close()
			return
		}
		d.in.Close()
	})
}

// close closes the server's streams and waits for it.
func (d *downstream) close() {
	d.closeInput()
	if d.closeWait != nil {
		if err := d.closeWait(); err != nil {
			d.log.Debug().Err(err).Msg("aggregate: server ended")
		}
	}
	if d.out != nil {
		d.out.Close()
	}
}

// write sends a message to the server; a failure means the server is
// going, which its reader reports.
func (d *downstream) write(msg []byte) error {
	if d.conn != nil {
		return d.conn.Send(msg)
	}
	return d.w.Write(msg)
}

func (d *downstream) read() {
	if d.conn != nil {
		d.readConn()
		return
	}
	rd := lineio.NewReader(d.out, d.s.cfg.MaxMessageSize)
	var err error
	for {
		line, rerr := rd.Read()
		if errors.Is(rerr, lineio.ErrTooLong) {
			d.s.warn.Warn(d.log, "server-too-long").Err(rerr).Msg("aggregate: skipped an over-long message from a server")
			continue
		}
		if rerr != nil {
			err = rerr
			break
		}
		d.fromServer(line)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // a server does not end its output on its own
	}
	d.die(err)
}

// readConn is read for a server reached in-process: its messages come
// whole, checked and parsed (Conn), and are not parsed again here.
func (d *downstream) readConn() {
	limit := d.s.cfg.MaxMessageSize
	if limit <= 0 {
		limit = lineio.DefaultMaxLineSize
	}
	for {
		var m wire.Message
		if err := d.conn.Recv(&m); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // a server does not end on its own
			}
			d.die(err)
			return
		}
		if len(m.Raw) > limit { // the bound a line of Dial's streams has
			d.s.warn.Warn(d.log, "server-too-long").Int("bytes", len(m.Raw)).Msg("aggregate: skipped an over-long message from a server")
			continue
		}
		d.fromServerParsed(&m, true)
	}
}

// isGone reports whether the server has ended.
func (d *downstream) isGone() bool {
	select {
	case <-d.gone:
		return true
	default:
		return false
	}
}

func (d *downstream) goneErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Errorf("%w: %q (%v)", ErrServerGone, d.name, d.err)
}

// die records the end of the server: waiting calls fail, the requests it
// relayed to the client are cancelled there, and the client hears that
// the lists changed.
func (d *downstream) die(err error) {
	d.mu.Lock()
	d.err = err
	close(d.gone)
	relayed := d.relayed
	d.relayed = map[string]int64{}
	clear(d.pending)
	clear(d.tokens)
	d.mu.Unlock()
	d.s.downstreamGone(d, relayed, err)
}

// fromServer handles one line of a server. Unlike a lone child's output,
// which only harms its own client, a line one server gets to the client
// can break the session of every server (a JSON decoder may give up on
// the stream), so each is checked whole with wire.Valid first: a second
// scan of each message, the price of one server's garbage staying its
// own.
func (d *downstream) fromServer(line []byte) {
	if !wire.Valid(line) {
		d.s.warn.Warn(d.log, "server-unparsable").Msg("aggregate: dropped a line from a server that is not JSON")
		return
	}
	d.fromServerChecked(line)
}

// fromServerChecked is fromServer for a line known to be JSON.
func (d *downstream) fromServerChecked(line []byte) {
	var m wire.Message
	if err := wire.Parse(line, &m); err != nil {
		d.s.warn.Warn(d.log, "server-unparsable").Err(err).Msg("aggregate: dropped a message from a server")
		return
	}
	d.fromServerParsed(&m, false)
}

// fromServerParsed handles a message of the server, parsed; owned: m.Raw
// is the downstream's to keep (a Conn's), not a reader's reused line.
func (d *downstream) fromServerParsed(m *wire.Message, owned bool) {
	d.namespaceTasks(m) // its task ids, as the client knows them (tasks.go)
	line := m.Raw
	switch {
	case m.Kind == wire.KindResponse:
		d.response(m, owned)
	case m.Kind == wire.KindRequest && m.Method == "ping":
		d.request(m) // about the link, answered whatever its state
	default:
		d.order.Lock()
		defer d.order.Unlock()
		if d.opened {
			d.handle(m)
			return
		}
		if len(d.held) >= maxHeld || d.heldBytes+len(line) > maxHeldBytes {
			d.s.warn.Warn(d.log, "server-held-full").Msg("aggregate: dropped a message from a server not yet in the session: too much held")
			return
		}
		d.held = append(d.held, bytes.Clone(line))
		d.heldBytes += len(line)
	}
}

// handle handles a request or notification of the server. d.order is
// held.
func (d *downstream) handle(m *wire.Message) {
	if m.Kind == wire.KindRequest {
		d.request(m)
	} else {
		d.notification(m)
	}
}

// open lets the server talk to the client: what it sent before is handled
// now, in order. A server ready for the client's initialize answer is
// opened as soon as it has initialized (what it sends goes on as it
// comes); a late one once it has joined, after that answer.
func (d *downstream) open() {
	d.order.Lock()
	defer d.order.Unlock()
	d.opened = true
	for _, line := range d.held {
		var m wire.Message
		wire.Parse(line, &m) // parsed before, from the same bytes
		d.handle(&m)
	}
	d.held, d.heldBytes = nil, 0
}

// response hands an answer to the call waiting for it. An id the server
// was not given, or was given and has answered already, matches nothing:
// the answer is dropped, so it cannot reach the client.
func (d *downstream) response(m *wire.Message, owned bool) {
	id, ok := wire.ParseIntID(m.IDBytes())
	var ch chan *wire.Message
	if ok {
		d.mu.Lock()
		ch = d.pending[id]
		delete(d.pending, id)
		d.mu.Unlock()
	}
	if ch == nil {
		d.s.warn.Warn(d.log, "server-stray-answer").Str("id", string(m.IDBytes())).
			Msg("aggregate: dropped an answer from a server to no request of ours")
		return
	}
	// Its spans hold for a copy of its bytes: the caller gets the
	// message parsed, not parsed again (the reader's line is reused).
	a := *m
	if !owned {
		a.Raw = bytes.Clone(m.Raw)
	}
	ch <- &a // buffered, and sent to once
}

// call sends the request build makes around a fresh id and waits for the
// answer, ctx, or the end of the server. token is the client's progress
// token, if the request carries one: build then also gets a fresh token
// for the server, which the server's progress notifications are mapped
// back from.
func (d *downstream) call(ctx context.Context, method string, token []byte, build func(id, token []byte) []byte) (*wire.Message, error) {
	ch := make(chan *wire.Message, 1)
	d.mu.Lock()
	if d.err != nil || d.isGone() {
		d.mu.Unlock()
		return nil, d.goneErr()
	}
	d.nextID++
	id := d.nextID
	d.pending[id] = ch
	var tok int64
	if token != nil {
		d.nextID++
		tok = d.nextID
		d.tokens[tok] = token
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.pending, id)
		delete(d.tokens, tok)
		d.mu.Unlock()
	}()
	idb := wire.AppendInt(nil, id)
	var tokb []byte
	if tok != 0 {
		tokb = wire.AppendInt(nil, tok)
	}
	if err := d.write(build(idb, tokb)); err != nil {
		return nil, fmt.Errorf("%w: %q (%w)", ErrServerGone, d.name, err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-d.gone:
		select {
		case r := <-ch: // answered just before it ended
			return r, nil
		default:
			return nil, d.goneErr()
		}
	case <-ctx.Done():
		// "The initialize request MUST NOT be cancelled by clients"
		// (2025-11-25 cancellation).
		if method != "initialize" && !d.isGone() {
			params := append(append([]byte(`{"requestId":`), idb...), `,"reason":"cancelled by the client"}`...)
			d.post(wire.Notification("notifications/cancelled", params))
		}
		return nil, ctx.Err()
	}
}

// request handles a request from the server to the client.
func (d *downstream) request(m *wire.Message) {
	switch m.Method {
	case "ping":
		// About the link between the two, which is ours.
		d.post(wire.ResultResponse(m.IDBytes(), []byte("{}")))
	case "sampling/createMessage", "elicitation/create", "roots/list":
		d.s.relay(d, m)
	default:
		d.post(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound, "aggregate: method not found: "+m.Method, nil))
	}
}

func (d *downstream) notification(m *wire.Message) {
	s := d.s
	switch m.Method {
	case "notifications/progress":
		tok, ok := wire.ParseIntID(m.Bytes(m.ProgressToken))
		var up []byte
		if ok {
			d.mu.Lock()
			up = d.tokens[tok]
			d.mu.Unlock()
		}
		if up == nil {
			s.warn.Warn(d.log, "server-stray-progress").Msg("aggregate: dropped progress from a server for no request of ours")
			return
		}
		s.writeUp(wire.Splice(m.Raw, wire.Edit{Span: m.ProgressToken, Value: up}))
	case "notifications/cancelled":
		s.serverCancelled(d, m)
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		if s.isReady() {
			s.writeUp(m.Raw)
		}
	case "notifications/resources/updated":
		s.resourceUpdated(d, m)
	case "notifications/message":
		// "Servers that emit log message notifications MUST declare the
		// logging capability" (2025-11-25 logging): a late server's may
		// pass only if the session declared it.
		if d.late && !s.offered.logging {
			d.log.Debug().Msg("aggregate: log message of a late server dropped: the session did not offer logging")
			return
		}
		s.writeUp(m.Raw)
	case "notifications/elicitation/complete":
		s.writeUp(m.Raw)
	case "notifications/tasks/status", "notifications/tasks":
		s.writeUp(m.Raw) // its task id namespaced on the way in (tasks.go)
	default:
		d.log.Debug().Str("method", m.Method).Msg("aggregate: notification from a server not forwarded")
	}
}
