package connect

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
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

// serverReq is a server-to-client request waiting for the host.
type serverReq struct {
	id     []byte
	method string
	params []byte // nil when absent
}

// call is one host request forwarded to the remote, across the host's
// retries.
type call struct {
	h        *modernHost
	method   string
	wid      []byte   // the remote's id for it
	orig     *pending // the host request that started it
	progress []byte   // its progress token, raw: the one the remote knows
	ctx      context.Context
	cancel   context.CancelFunc

	mu   sync.Mutex
	host *pending // the host request the call answers next
	// hostToken is the progress token of host, nil if it asked for none.
	// A retry carries a token of its own, and the host has forgotten the
	// first round's ("Received a progress notification for an unknown
	// token"): the remote's progress goes out under this one.
	hostToken []byte
	caps      wire.Capabilities
	logs      bool                 // the host asked for log messages
	state     string               // the request state while suspended
	asked     map[string]serverReq // by input key, while suspended
	queue     []serverReq          // server requests that came while suspended
	resumed   chan struct{}        // closed when a suspension ends
	timer     *time.Timer
	nextKey   int
	done      bool  // the host got its final answer (or never will)
	dead      error // the bridge gave up on the call while suspended
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
	c := &call{h: h, method: m.Method, wid: h.b.mintID("call"), orig: p, host: p, ctx: ctx, cancel: cancel,
		caps: m.ClientCapabilities(), logs: m.LogLevel != ""}
	if m.ProgressToken.Present() {
		c.progress = clone(m.Bytes(m.ProgressToken))
		c.hostToken = c.progress
	}
	body, err := translate.ToLegacy(m, c.wid)
	var wm wire.Message
	if err == nil {
		err = wire.Parse(body, &wm)
	}
	if err != nil {
		b.answerError(p, err)
		return
	}
	b.setWireID(p, c.wid)
	b.setHooks(p, c.final, c.other)
	b.setOnCancel(p, c.cancelledByHost)
	if p.cancelled.Load() {
		return // cancelled before it was sent
	}
	// Leaving means no retry can come: a suspended call ends at once.
	stop := context.AfterFunc(b.streamCtx, func() { c.abort("", errHostGone) })
	defer stop()
	h.track(c)
	err = b.forward(ctx, p, &wm)
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
func (c *call) other(msg []byte, m *wire.Message) {
	switch m.Kind {
	case wire.KindRequest:
		c.h.serverRequest(c, m)
	case wire.KindNotification:
		if c.orig.cancelled.Load() {
			return
		}
		switch {
		case m.Method == "notifications/message":
			c.mu.Lock()
			logs := c.logs
			c.mu.Unlock()
			if logs {
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
// token of the host request the call now answers. Between rounds nobody
// holds a token: "Progress notifications MUST only reference tokens that
// were provided in an active request" (basic/patterns/progress), and the
// suspended round's request is answered.
func (c *call) forwardProgress(msg []byte, m *wire.Message) {
	c.mu.Lock()
	token, suspended := c.hostToken, c.state != ""
	c.mu.Unlock()
	switch {
	case suspended || token == nil || !m.ProgressToken.Present():
	default:
		c.h.b.write(translate.RetargetProgress(msg, m, token))
	}
}

// final writes the call's response to the host request it now answers,
// once no input round is open. The check and the claim happen under one
// lock: a retry may open a new round at any moment.
func (c *call) final(fm *wire.Message) {
	for {
		c.mu.Lock()
		if c.dead != nil {
			c.mu.Unlock()
			return
		}
		if c.state == "" {
			host := c.host
			c.done = true
			c.mu.Unlock()
			if out := c.urlAnswer(fm, host.id); out != nil {
				c.h.b.writeFinal(host, out)
				release(host)
				return
			}
			c.h.b.writeFinal(host, translate.Complete(c.h.taskShape(c.method, fm), c.method, host.id))
			release(host)
			return
		}
		ch := c.resumed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.ctx.Done():
			return
		}
	}
}

// release lets a retry's goroutine go once its request is answered.
func release(p *pending) {
	if p.answered != nil {
		close(p.answered)
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
	sr := serverReq{id: clone(m.IDBytes()), method: m.Method}
	if m.Params.Present() {
		sr.params = clone(m.Bytes(m.Params))
	}
	if sr.method == "ping" {
		// "The receiver MUST respond promptly with an empty response."
		h.answerRemote(sr, []byte("{}"), 0, "")
		return
	}
	if c == nil && sr.method == "roots/list" {
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
	case !c.covers(sr.method, sr.params):
		h.refuse(sr, "client does not support "+capabilityOf(sr.method))
	case !c.ask(sr):
		h.refuse(sr, "mcp-bridge: the request this input was for has ended")
	}
}

// rootsOutsideCall answers a roots/list that belongs to no call. A
// 2026-07-28 host can only be asked inside a call; the bridge answers
// with the roots the host gave in its latest input round, else with the
// error SEP-2260 names: "Clients receiving server-to-client requests with
// no associated outbound request SHOULD respond with a -32602 (Invalid
// Params) error."
func (h *modernHost) rootsOutsideCall(sr serverReq) {
	h.rootsMu.Lock()
	roots := h.roots
	h.rootsMu.Unlock()
	if roots != nil {
		h.answerRemote(sr, roots, 0, "")
		return
	}
	why := "mcp-bridge: the host speaks 2026-07-28 and gives its roots only inside a call; this roots/list came on the GET stream, outside any"
	h.b.warns.refused.Event(&h.b.log, zerolog.InfoLevel).Str("method", sr.method).Str("reason", why).Msg("answering a server request on the host's behalf")
	h.answerRemote(sr, nil, wire.CodeInvalidParams, why)
}

func capabilityOf(method string) string {
	switch method {
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	case "elicitation/create":
		return "elicitation"
	}
	return method
}

// refuse answers a server request the host cannot get: an elicitation is
// declined, which every server must handle; anything else gets an error.
func (h *modernHost) refuse(sr serverReq, why string) {
	h.b.warns.refused.Event(&h.b.log, zerolog.InfoLevel).Str("method", sr.method).Str("reason", why).Msg("answering a server request on the host's behalf")
	if sr.method == "elicitation/create" {
		h.answerRemote(sr, []byte(`{"action":"decline"}`), 0, "")
		return
	}
	h.answerRemote(sr, nil, wire.CodeMethodNotFound, why)
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
		c.mu.Lock()
		usable, suspended := !c.done && c.dead == nil, c.state != ""
		c.mu.Unlock()
		switch {
		case usable && !suspended:
			return c
		case usable && waiting == nil:
			waiting = c
		}
	}
	return waiting
}

// ask puts a server request to the host through the call: at once as an
// InputRequiredResult, or after the open round. It reports false when the
// call can no longer ask.
func (c *call) ask(sr serverReq) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.dead != nil || c.h.b.streamCtx.Err() != nil {
		return false
	}
	if c.state != "" {
		c.queue = append(c.queue, sr)
		return true
	}
	c.suspendLocked([]serverReq{sr})
	return true
}

// suspendLocked answers the current host request with an InputRequiredResult for
// reqs. The request state is an unguessable token that only maps to this
// call; it never leaves the bridge and the host.
func (c *call) suspendLocked(reqs []serverReq) {
	b := c.h.b
	token := translate.NewState()
	c.state, c.asked, c.resumed = token, map[string]serverReq{}, make(chan struct{})
	inputs := make([]translate.Input, len(reqs))
	for i, sr := range reqs {
		c.nextKey++
		key := "r" + strconv.Itoa(c.nextKey)
		c.asked[key] = sr
		inputs[i] = translate.Input{Key: key, Method: sr.method, Params: sr.params}
	}
	res := translate.InputRequired(inputs, token)
	c.h.tokMu.Lock()
	c.h.tokens[token] = c
	c.h.tokMu.Unlock()
	wait := suspendTimeout
	c.timer = time.AfterFunc(wait, func() { c.abort(token, fmt.Errorf("the host did not retry within %v", wait)) })
	host := c.host
	// The host's id is answered: it may use it again.
	b.retire(host)
	b.writeFinal(host, wire.ResultResponse(host.id, res))
	release(host)
}

// abort gives up on a suspended call (with token, if not ""): the host
// did not retry in time, or left.
func (c *call) abort(token string, why error) {
	c.mu.Lock()
	if c.state == "" || (token != "" && c.state != token) || c.dead != nil {
		c.mu.Unlock()
		return
	}
	c.dead = why
	c.mu.Unlock()
	c.cancel()
}

// cancelledByHost handles the host's notifications/cancelled for the host
// request the call answers: 2026-07-28 wants no more messages for it, the
// legacy remote wants to be told (it does not read a closed stream as a
// cancellation). It runs on the stdin loop.
func (c *call) cancelledByHost() {
	c.mu.Lock()
	host := c.host
	c.mu.Unlock()
	host.cancelled.Store(true)
	c.orig.cancelled.Store(true)
	c.cancel()
	b := c.h.b
	ctx := context.WithoutCancel(c.ctx)
	b.inOrder(ctx, func(ctx context.Context) { c.h.postCancel(ctx, c.wid, "the client cancelled the request") })
}

// end finishes the call after its stream is done: it answers the host if
// nobody did, and the remote's open requests if the host never will.
func (c *call) end(err error) {
	b := c.h.b
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done = true
	host, dead, token := c.host, c.dead, c.state
	open := c.queue
	for _, sr := range c.asked {
		open = append(open, sr)
	}
	c.asked, c.queue, c.state = nil, nil, ""
	c.mu.Unlock()
	if token != "" {
		c.h.tokMu.Lock()
		delete(c.h.tokens, token)
		c.h.tokMu.Unlock()
	}
	for _, sr := range open {
		c.h.answerRemote(sr, nil, wire.CodeInternalError, "mcp-bridge: the host did not answer: the request this input was for has ended")
	}
	if dead != nil || token != "" || errors.Is(err, context.DeadlineExceeded) {
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
	if token != "" {
		return // the host holds an InputRequiredResult; there is no one to answer
	}
	if !host.cancelled.Load() {
		if err == nil {
			err = errors.New("the remote closed the response stream before answering")
		}
		b.setWireID(host, c.wid)
		b.answerError(host, err)
	}
	release(host)
}

// resume takes the host's retry of a suspended call: the answers go to the
// remote, and the call goes on with the retry as its host request.
func (h *modernHost) resume(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	token := translate.RetryState(m)
	h.tokMu.Lock()
	c := h.tokens[token]
	delete(h.tokens, token)
	h.tokMu.Unlock()
	expired := wire.ErrorResponse(p.id, wire.CodeInvalidParams, translate.ExpiredState, nil)
	if c == nil {
		b.writeFinal(p, expired)
		return
	}
	responses := translate.InputResponses(m)
	// The round ends and the next begins under one hold of c.mu: once the
	// lock is let go with no round open, a server request arriving at any
	// moment may open one itself (ask), answering p. A second round opened
	// here after that would answer p twice and end a round twice.
	c.mu.Lock()
	if c.state != token || c.dead != nil || c.done {
		c.mu.Unlock()
		b.writeFinal(p, expired)
		return
	}
	asked := c.asked
	c.state, c.asked = "", nil
	c.timer.Stop()
	close(c.resumed)
	c.host = p
	b.setWireID(p, c.wid)
	b.setOnCancel(p, c.cancelledByHost)
	p.answered = make(chan struct{})
	// The retry declares capabilities, log level and progress token
	// afresh.
	c.caps, c.logs = m.ClientCapabilities(), m.LogLevel != ""
	c.hostToken = nil
	if m.ProgressToken.Present() {
		c.hostToken = clone(m.Bytes(m.ProgressToken))
	}
	var answered, again []serverReq
	var answers [][]byte
	for _, k := range slices.Sorted(maps.Keys(asked)) {
		if r, ok := responses[k]; ok && len(r) > 0 {
			answered, answers = append(answered, asked[k]), append(answers, r)
		} else {
			// mrtr §Error Handling: missing input is asked for again.
			again = append(again, asked[k])
		}
	}
	if next := append(again, c.queue...); len(next) > 0 {
		c.queue = nil
		c.suspendLocked(next)
	}
	c.mu.Unlock()

	for i, sr := range answered {
		if sr.method == "roots/list" {
			h.rootsMu.Lock()
			h.roots = clone(answers[i])
			h.rootsMu.Unlock()
		}
		h.answerRemote(sr, answers[i], 0, "")
	}
	select {
	case <-p.answered:
	case <-ctx.Done():
	}
}
