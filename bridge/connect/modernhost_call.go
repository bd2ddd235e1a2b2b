package connect

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A legacy server asks for sampling, elicitation or roots with a JSON-RPC
// request on the stream of the call it needs them for (or on the GET
// stream), and waits for the answer before it finishes the call. A
// 2026-07-28 host cannot receive requests ("The server MUST NOT write
// JSON-RPC requests to stdout", stdio); it can only answer an
// InputRequiredResult and retry. So the bridge answers the host's call
// with an InputRequiredResult, keeps the call's POST stream open (unread messages
// wait in it), and when the host retries — new id, the input responses, the
// request state the bridge made up — POSTs the host's answers to the remote
// as the responses to its requests and goes on reading the original
// stream. The call's result reaches the host under the retry's id.

// suspendTimeout bounds how long a call waits for the host's retry (a
// variable for tests).
var suspendTimeout = translate.InputTTL

// hostReq is one host request a call answers: the first, then each retry,
// which declares its log level and progress token afresh.
type hostReq struct {
	p *pending
	// token is the progress token of p, nil if it asked for none. A retry
	// carries a token of its own, and the host has forgotten the first
	// round's ("Received a progress notification for an unknown token"):
	// the remote's progress goes out under this one.
	token []byte
	logs  bool // the host asked for log messages
	// answered, if set, is closed once the call answered p on another
	// goroutine's behalf (a retry of a suspended call: resume waits).
	answered chan struct{}
}

// call is one host request forwarded to the remote, across the host's
// retries; its input rounds are translate's machine (translate.Call), and
// call is its face, and the exchange of each host request it answers.
type call struct {
	translate.Call[hostReq]
	h        *modernHost
	method   string
	wid      []byte   // the remote's id for it
	orig     *pending // the host request that started it
	progress []byte   // its progress token, raw: the one the remote knows
	ctx      context.Context
	cancel   context.CancelFunc
}

// call forwards a request and sees it through its input rounds.
func (h *modernHost) call(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	if err := h.ensureSession(ctx, m); err != nil {
		b.answerError(p, err)
		return
	}
	ctx, cancelTimeout := b.requestCtx(ctx)
	defer cancelTimeout()
	h.applyLogLevel(ctx, m)
	m = h.augment(m)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &call{h: h, method: m.Method, wid: h.b.remote.MintID("call"), orig: p, ctx: ctx, cancel: cancel}
	first := hostReq{p: p, logs: m.LogLevel != ""}
	if m.ProgressToken.Present() {
		c.progress = clone(m.Bytes(m.ProgressToken))
		first.token = c.progress
	}
	h.rounds.Start(&c.Call, c, first, m.ClientCapabilities())
	body, err := translate.ToLegacy(m, c.wid)
	var wm wire.Message
	if err == nil {
		err = wire.Parse(body, &wm)
	}
	if err != nil {
		b.answerError(p, err)
		return
	}
	b.setExchange(p, c.wid, c)
	if p.cancelled.Load() {
		return // cancelled before it was sent
	}
	// Leaving means no retry can come: a suspended call ends at once.
	stop := context.AfterFunc(b.streamCtx, func() { c.Abort(errHostGone) })
	defer stop()
	h.track(c)
	err = b.remote.Forward(ctx, p, &wm)
	h.untrack(c)
	c.end(err)
}

func (h *modernHost) track(c *call) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
}

func (h *modernHost) untrack(c *call) {
	h.mu.Lock()
	h.calls = slices.DeleteFunc(h.calls, func(x *call) bool { return x == c })
	h.mu.Unlock()
}

// progressOwner returns the call in flight whose remote progress token is
// token, or nil.
func (h *modernHost) progressOwner(token []byte) *call {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.calls {
		if c.progress != nil && string(c.progress) == string(token) {
			return c
		}
	}
	return nil
}

// other handles a message on the call's stream that is not its response.
func (c *call) other(_ *pending, msg []byte, m *wire.Message) {
	switch m.Kind {
	case wire.KindRequest:
		c.h.serverRequest(c, m)
	case wire.KindNotification:
		if c.orig.cancelled.Load() {
			return
		}
		switch {
		case m.Method == "notifications/message":
			if host, _ := c.Current(); host.logs {
				c.h.b.write(msg)
			}
		case c.h.listeners.Deliver(m):
		case m.Method == "notifications/progress":
			c.forwardProgress(msg, m)
		case c.h.urls.Record(m): // recorded, not forwarded (urlelicit.go)
		default:
			c.h.b.write(msg)
		}
	}
}

// forwardProgress writes the remote's progress for the call under the
// token of the host request the call now answers; between rounds nobody
// holds a token (translate.Call.Current).
func (c *call) forwardProgress(msg []byte, m *wire.Message) {
	host, suspended := c.Current()
	switch {
	case suspended || host.token == nil || !m.ProgressToken.Present():
	default:
		c.h.b.write(translate.RetargetProgress(msg, m, host.token))
	}
}

// final writes the call's response to the host request it now answers,
// once no input round is open (translate.Call.Finish).
func (c *call) final(_ *pending, fm *wire.Message) {
	f, ok := c.Finish(c.ctx)
	if !ok {
		return
	}
	out := c.urlAnswer(fm, f.p.id)
	if out == nil {
		out = translate.Complete(c.h.taskShape(c.method, fm), c.method, f.p.id)
	}
	c.h.b.writeFinal(f.p, out)
	release(f)
}

// release lets a retry's goroutine go once its request is answered.
func release(host hostReq) {
	if host.answered != nil {
		close(host.answered)
	}
}

// serverRequest handles a server-to-client request from c's stream, or,
// with c nil, from the GET stream.
//
// On the GET stream, messages "SHOULD be unrelated to any concurrently-
// running JSON-RPC request from the client" (2025-11-25 transports
// §Listening for Messages from the Server), and SEP-2260 forbids roots,
// sampling and elicitation requests there. mcp-go v1.2.1 still sends the
// sampling of a call in flight only there, so a sampling or elicitation
// request, which a server makes for a handler, goes to the oldest call
// that can take it. A roots/list there is the server's own business
// (server-everything asks 350 ms after initialization): cutting an
// unrelated call into an input round for it would answer that call with
// input round it never caused, so the bridge answers it itself.
func (h *modernHost) serverRequest(c *call, m *wire.Message) {
	sr := translate.Ask{ID: clone(m.IDBytes()), Method: m.Method}
	if m.Params.Present() {
		sr.Params = clone(m.Bytes(m.Params))
	}
	if sr.Method == "ping" {
		// "The receiver MUST respond promptly with an empty response."
		h.answerRemote(sr, []byte("{}"), 0, "")
		return
	}
	if c == nil && sr.Method == "roots/list" {
		h.rootsOutsideCall(sr)
		return
	}
	if c == nil {
		c = h.pick()
	}
	switch {
	case c == nil:
		h.refuse(sr, "mcp-bridge: the host speaks 2026-07-28 and can only be asked for input during a tools/call, prompts/get or resources/read, and none is in flight")
	case !translate.AllowsInput(c.method):
		h.refuse(sr, "mcp-bridge: the host speaks 2026-07-28 and can only be asked for input during a tools/call, prompts/get or resources/read, not during "+c.method)
	case h.b.streamCtx.Err() != nil:
		h.refuse(sr, "mcp-bridge: the request this input was for has ended")
	default:
		c.Ask(sr)
	}
}

// rootsOutsideCall answers a roots/list that belongs to no call. A
// 2026-07-28 host can only be asked inside a call; the bridge answers
// with the roots the host gave in its latest input round, else with the
// error SEP-2260 names: "Clients receiving server-to-client requests with
// no associated outbound request SHOULD respond with a -32602 (Invalid
// Params) error."
func (h *modernHost) rootsOutsideCall(sr translate.Ask) {
	h.rootsMu.Lock()
	roots := h.roots
	h.rootsMu.Unlock()
	if roots != nil {
		h.answerRemote(sr, roots, 0, "")
		return
	}
	why := "mcp-bridge: the host speaks 2026-07-28 and gives its roots only inside a call; this roots/list came on the GET stream, outside any"
	h.logRefused(sr, why)
	h.answerRemote(sr, nil, wire.CodeInvalidParams, why)
}

// refuse answers a server request the host cannot get: an elicitation is
// declined, which every server must handle; anything else gets an error.
func (h *modernHost) refuse(sr translate.Ask, why string) {
	h.logRefused(sr, why)
	result, code, message := translate.Refuse(sr.Method, why)
	h.answerRemote(sr, result, code, message)
}

func (h *modernHost) logRefused(sr translate.Ask, why string) {
	h.b.warns.refused.Event(&h.b.log, zerolog.InfoLevel).Str("method", sr.Method).Str("reason", why).Msg("answering a server request on the host's behalf")
}

// pick chooses the call a GET-stream request belongs to: the oldest
// input-capable call not already waiting for the host, else the oldest
// waiting one (the request then waits for that call's retry).
func (h *modernHost) pick() *call {
	h.mu.Lock()
	defer h.mu.Unlock()
	var waiting *call
	for _, c := range h.calls {
		if !translate.AllowsInput(c.method) {
			continue
		}
		usable, suspended := c.Usable()
		switch {
		case usable && !suspended:
			return c
		case usable && waiting == nil:
			waiting = c
		}
	}
	return waiting
}

// AnswerBack POSTs the host's answer (or the bridge's) to the remote; a
// host's roots are kept for a roots/list outside any call.
func (c *call) AnswerBack(sr translate.Ask, result []byte, code int, message string) {
	h := c.h
	if sr.Method == "roots/list" && result != nil {
		h.rootsMu.Lock()
		h.roots = clone(result)
		h.rootsMu.Unlock()
	}
	h.answerRemote(sr, result, code, message)
}

// Suspend answers the host request with the InputRequiredResult; the
// call's POST stream stays open, and unread messages wait in it.
func (c *call) Suspend(host hostReq, res []byte) {
	b := c.h.b
	// The host's id is answered: it may use it again.
	b.retire(host.p)
	b.writeFinal(host.p, wire.ResultResponse(host.p.id, res))
	release(host)
}

// Attach makes the host's retry the request the call answers: the
// remote's response, and the host's cancellation, now concern it.
func (c *call) Attach(host hostReq, _ bool) {
	c.h.b.setExchange(host.p, c.wid, c)
}

// Expire: the call's stream is closed, and end tells the remote.
func (c *call) Expire(error) { c.cancel() }

func (c *call) Refused(sr translate.Ask, _ translate.Refusal, why string) { c.h.logRefused(sr, why) }

// cancelled handles the host's notifications/cancelled for the host
// request the call answers: 2026-07-28 wants no more messages for it, the
// legacy remote wants to be told (it does not read a closed stream as a
// cancellation). It runs on the stdin loop.
func (c *call) cancelled(*pending) bool {
	host, _ := c.Current()
	host.p.cancelled.Store(true)
	c.orig.cancelled.Store(true)
	c.cancel()
	b := c.h.b
	ctx := context.WithoutCancel(c.ctx)
	b.inOrder(ctx, func(ctx context.Context) { c.h.postCancel(ctx, c.wid, "the client cancelled the request") })
	return true
}

// end finishes the call after its stream is done: it answers the host if
// nobody did, and the remote's open requests if the host never will.
func (c *call) end(err error) {
	b := c.h.b
	suspended, dead, ok := c.End()
	if !ok {
		return
	}
	if dead != nil || suspended || errors.Is(err, context.DeadlineExceeded) {
		why := dead
		if why == nil {
			why = err
		}
		if why == nil {
			why = errors.New("the call ended while waiting for the host's input")
		}
		b.log.Info().Str("method", c.method).Err(why).Msg("abandoning a call")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.h.postCancel(ctx, c.wid, "mcp-bridge: "+why.Error())
		cancel()
	}
	if suspended {
		return // the host holds an InputRequiredResult; there is no one to answer
	}
	host, _ := c.Current()
	if !host.p.cancelled.Load() {
		if err == nil {
			err = errors.New("the remote closed the response stream before answering")
		}
		b.setExchange(host.p, c.wid, c)
		b.answerError(host.p, err)
	}
	release(host)
}

// resume takes the host's retry of a suspended call: the answers go to the
// remote, and the call goes on with the retry as its host request.
func (h *modernHost) resume(ctx context.Context, p *pending, m *wire.Message) {
	host := hostReq{p: p, logs: m.LogLevel != ""}
	if m.ProgressToken.Present() {
		host.token = clone(m.Bytes(m.ProgressToken))
	}
	// Set before the retry is taken: a round opened on it answers p.
	host.answered = make(chan struct{})
	c, _ := h.rounds.Retry(translate.RetryState(m), host, translate.InputResponses(m), m.ClientCapabilities())
	if c == nil {
		h.b.writeFinal(p, wire.ErrorResponse(p.id, wire.CodeInvalidParams, translate.ExpiredState, nil))
		return
	}
	select {
	case <-host.answered:
	case <-ctx.Done():
	}
}
