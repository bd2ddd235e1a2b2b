package translate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A legacy (2025) back asks for sampling, elicitation or roots with a
// server-to-client request during a call, and waits for the answer before
// it finishes the call. A 2026-07-28 front cannot receive requests; it can
// only answer an InputRequiredResult and retry (basic/patterns/mrtr). So
// the bridge answers the front's request with an InputRequiredResult
// naming the back's requests, keeps the call in flight at the back, and
// when the front retries — a new id, the input responses, the
// byte-identical request state — answers the back's requests with them,
// and the retry takes over the call: its result reaches the front under
// the retry's id. The back may ask again, during the call or while a round
// is open; each request joins the next round.
//
// This file is that machine, once for both faces: serve (a 2026-07-28
// HTTP client in front of a 2025 stdio child) and connect (a 2026-07-28
// stdio host in front of a 2025 remote). What differs between them — how
// the back is answered and cancelled, how the front's current request gets
// a round — is a RoundFace.

// Ask is one server-to-client request of the back, carried to the front
// in an input round.
type Ask struct {
	ID     []byte // the back's request id, raw
	Method string
	Params []byte // nil when absent
}

// Refusal says why the machine answered an Ask on the front's behalf.
type Refusal int

const (
	// RefusedCapability: the front did not declare the capability.
	RefusedCapability Refusal = iota
	// RefusedEnded: the call the Ask was for has ended or was given up.
	RefusedEnded
	// RefusedFull: the call has too many input requests open.
	RefusedFull
)

// RoundFace is what a face does for one call in input rounds. F is the
// face's handle on one front request: the call's first, then each retry.
//
// Suspend and Attach run with the call's lock held: they must not block
// for long nor call back into the Call. AnswerBack and Expire run with no
// lock held.
type RoundFace[F any] interface {
	// AnswerBack sends the back the response to its request a: result, or
	// else an error with code and message.
	AnswerBack(a Ask, result []byte, code int, message string)
	// Suspend answers front request f with an InputRequiredResult, result
	// (the result object); the call stays in flight at the back, and what
	// it sends meanwhile waits for the retry that takes it over.
	Suspend(f F, result []byte)
	// Attach makes retry f the front request the call answers next.
	// resumes: every input is answered and the call goes on at the back
	// (its result, and what it sent meanwhile, now go to f); else f gets
	// the next round at once (Suspend follows).
	Attach(f F, resumes bool)
	// Expire gives up on the call at the back: its round was never
	// retried within the TTL, or the front left (Abort).
	Expire(why error)
	// Refused notes an Ask answered on the front's behalf (with why).
	Refused(a Ask, r Refusal, why string)
}

// Rounds is one face's table of suspended calls, by request state.
type Rounds[F any] struct {
	// TTL bounds how long a suspended call waits for the retry; 0 means
	// InputTTL.
	TTL time.Duration
	// MaxInputs bounds the input requests one call holds unanswered; 0
	// means MaxRoundInputs. MaxBytes bounds their params' size (one
	// stream's bound); 0 means no bound beyond the messages' own.
	MaxInputs, MaxBytes int
	// MaxSuspended bounds the calls suspended at once (each waits up to
	// the TTL for a retry that may never come); 0 means MaxSuspendedCalls.
	MaxSuspended int

	mu      sync.Mutex
	byState map[string]*Call[F]
	// expiring owns each expiry that a timer started (giveUp and the
	// face's calls it makes): Close waits for them, so no face method
	// runs once the face has closed its Rounds.
	expiring lifecycle.Group
}

// MaxRoundInputs is the default bound of Rounds.MaxInputs: neither a
// back nor a front can grow a call's round at will.
const MaxRoundInputs = 64

// MaxSuspendedCalls is the default bound of Rounds.MaxSuspended: a front
// that never retries cannot keep the back's calls waiting without end.
const MaxSuspendedCalls = 1024

// Call is one call's input rounds: the front request it answers, the
// back's requests not yet answered, and while suspended the request state
// and its timer. Embed it in the face's call and Start it on the back's
// first request.
type Call[F any] struct {
	r    *Rounds[F]
	face RoundFace[F]

	mu    sync.Mutex
	front F // the front request the call answers next (the last one, while suspended)
	// caps are the front's clientCapabilities, declared afresh by each
	// retry.
	caps    wire.Capabilities
	state   string // the request state while suspended, else ""
	asks    []ask  // unanswered: asks[:sent] went out in the open round
	sent    int
	bytes   int // size of the asks' params
	nextKey int
	timer   *time.Timer
	resumed chan struct{} // closed when a suspension ends
	claimed bool          // the final result was claimed (Finish) or the call ended (End)
	dead    error         // the bridge gave up on the call while suspended
}

type ask struct {
	Ask
	key string // its key in inputRequests and inputResponses
}

// Start readies c, a call answering front f for now, whose front declared
// caps.
func (r *Rounds[F]) Start(c *Call[F], face RoundFace[F], f F, caps wire.Capabilities) {
	c.r, c.face, c.front, c.caps = r, face, f, caps
}

// Ask puts the back's request a to the front through the call: at once,
// as an InputRequiredResult to the front's current request, or, while a
// round is open, in the next round. When it cannot, a is answered here.
func (c *Call[F]) Ask(a Ask) {
	c.mu.Lock()
	if !Covers(c.caps, a.Method, a.Params) {
		c.mu.Unlock()
		// mrtr: the server "MUST NOT" ask for input the client's
		// clientCapabilities did not declare. Declined on its behalf.
		c.refuse(a, RefusedCapability, "client does not support "+CapabilityOf(a.Method))
		return
	}
	if c.claimed || c.dead != nil {
		c.mu.Unlock()
		c.refuse(a, RefusedEnded, "mcp-bridge: the request this input was for has ended")
		return
	}
	full := len(c.asks) >= c.r.maxInputs() || (c.r.MaxBytes > 0 && c.bytes+len(a.Params) > c.r.MaxBytes)
	why := "mcp-bridge: too many input requests open for this call"
	if !full && c.state == "" && c.r.suspended() >= c.r.maxSuspended() {
		// This request would open a round: one call more waiting.
		full, why = true, "mcp-bridge: too many calls waiting for the client's input"
	}
	if full {
		c.mu.Unlock()
		c.face.Refused(a, RefusedFull, why)
		c.face.AnswerBack(a, nil, wire.CodeInternalError, why)
		return
	}
	c.nextKey++
	c.bytes += len(a.Params)
	c.asks = append(c.asks, ask{Ask: a, key: "input-" + strconv.Itoa(c.nextKey)})
	if c.state == "" {
		c.suspendLocked()
	}
	c.mu.Unlock()
}

// refuse answers a the front cannot get: an elicitation is declined,
// which every server must handle; anything else gets an error.
func (c *Call[F]) refuse(a Ask, r Refusal, why string) {
	c.face.Refused(a, r, why)
	result, code, message := Refuse(a.Method, why)
	c.face.AnswerBack(a, result, code, message)
}

// Refuse is the answer to a server-to-client request of method the front
// cannot be asked, with why: a declined elicitation (result), else a
// Method not found error (code, message).
func Refuse(method, why string) (result []byte, code int, message string) {
	if method == "elicitation/create" {
		return []byte(`{"action":"decline"}`), 0, ""
	}
	return nil, wire.CodeMethodNotFound, why
}

// CapabilityOf names the client capability a server-to-client request of
// method needs.
func CapabilityOf(method string) string {
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

// suspendLocked answers the front's current request with an
// InputRequiredResult for every open ask. The request state is an
// unguessable token that only maps to this call; it never leaves the
// bridge and the front.
func (c *Call[F]) suspendLocked() {
	state := NewState()
	c.state, c.resumed, c.sent = state, make(chan struct{}), len(c.asks)
	c.r.mu.Lock()
	if c.r.byState == nil {
		c.r.byState = map[string]*Call[F]{}
	}
	c.r.byState[state] = c
	c.r.mu.Unlock()
	ttl := c.r.ttl()
	c.timer = time.AfterFunc(ttl, func() {
		// Refused once Close has begun: Close forgets every call itself.
		c.r.expiring.Go(func() { c.giveUp(state, fmt.Errorf("the client did not retry within %v", ttl)) })
	})
	inputs := make([]Input, len(c.asks))
	for i, a := range c.asks {
		inputs[i] = Input{Key: a.key, Method: a.Method, Params: a.Params}
	}
	c.face.Suspend(c.front, InputRequired(inputs, state))
}

// Retry takes the front's retry f of the call suspended under state, with
// the retry's input responses and capabilities: the answers go to the
// back, and f becomes the request the call answers — resumed at the back
// when every input is answered, else given the next round at once. It
// returns nil when no call waits under state (expired, answered, or never
// minted here): f is then the face's to answer with ExpiredState.
func (r *Rounds[F]) Retry(state string, f F, responses map[string]json.RawMessage, caps wire.Capabilities) (c *Call[F], resumed bool) {
	r.mu.Lock()
	c = r.byState[state]
	delete(r.byState, state)
	r.mu.Unlock()
	if c == nil {
		return nil, false
	}
	// The round ends and the next begins under one hold of c.mu: once the
	// lock is let go with no round open, a back request arriving at any
	// moment may open one itself (Ask), answering f. A second round opened
	// here after that would answer f twice and end a round twice.
	c.mu.Lock()
	if c.state != state || c.dead != nil || c.claimed {
		c.mu.Unlock()
		return nil, false
	}
	c.state = ""
	c.timer.Stop()
	close(c.resumed)
	c.front, c.caps = f, caps
	var answered []ask
	var answers []json.RawMessage
	rest := c.asks[:0:0]
	c.bytes = 0
	for i, a := range c.asks {
		if v, ok := responses[a.key]; ok && len(v) > 0 && i < c.sent {
			answered, answers = append(answered, a), append(answers, v)
			continue
		}
		// mrtr §Error Handling: missing input is asked for again, under
		// its key; requests that came during the round join it.
		rest = append(rest, a)
		c.bytes += len(a.Params)
	}
	c.asks, c.sent = rest, 0
	resumed = len(rest) == 0
	c.face.Attach(f, resumed)
	if !resumed {
		c.suspendLocked()
	}
	c.mu.Unlock()
	for i, a := range answered {
		c.face.AnswerBack(a.Ask, answers[i], 0, "")
	}
	return c, resumed
}

// giveUp gives up on the call if it is suspended (under state, if not
// ""): the back's open requests get errors and the face cancels the call
// at the back.
func (c *Call[F]) giveUp(state string, why error) {
	c.mu.Lock()
	if c.state == "" || (state != "" && c.state != state) || c.dead != nil {
		c.mu.Unlock()
		return
	}
	c.dead = why
	c.timer.Stop()
	c.r.forget(c.state)
	asks := c.asks
	c.asks, c.bytes = nil, 0
	c.mu.Unlock()
	for _, a := range asks {
		c.face.AnswerBack(a.Ask, nil, wire.CodeInternalError, "mcp-bridge: the client did not answer: "+why.Error())
	}
	c.face.Expire(why)
}

// Abort gives up on the call if it is suspended: the front left, and no
// retry can come.
func (c *Call[F]) Abort(why error) { c.giveUp("", why) }

// Finish claims the front request for the call's final result, once no
// round is open: the check and the claim happen under one lock, since a
// retry may open a new round at any moment. It waits while a round is
// open, and reports false when the call was given up or ctx ended first.
func (c *Call[F]) Finish(ctx context.Context) (f F, ok bool) {
	for {
		c.mu.Lock()
		if c.dead != nil {
			c.mu.Unlock()
			return f, false
		}
		if c.state == "" {
			c.claimed = true
			f = c.front
			c.mu.Unlock()
			return f, true
		}
		ch := c.resumed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return f, false
		}
	}
}

// End closes the call for input once the back is done with it: the
// back's open requests get errors. It reports whether a round was open
// (the front holds an InputRequiredResult, and there is no one to answer)
// and why the bridge gave up, if it did; ok is false if the final result
// was claimed already.
func (c *Call[F]) End() (suspended bool, dead error, ok bool) {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.claimed {
		c.mu.Unlock()
		return false, nil, false
	}
	c.claimed = true
	asks := c.asks
	c.asks, c.bytes = nil, 0
	suspended, dead = c.state != "", c.dead
	if suspended && dead == nil {
		c.r.forget(c.state)
	}
	c.mu.Unlock()
	for _, a := range asks {
		c.face.AnswerBack(a.Ask, nil, wire.CodeInternalError, "mcp-bridge: the client did not answer: the request this input was for has ended")
	}
	return suspended, dead, true
}

// Current returns the front request the call answers (the last one while
// suspended) and whether a round is open. Between rounds no front request
// is active: "Progress notifications MUST only reference tokens that were
// provided in an active request" (basic/patterns/progress), and the
// suspended round's request is answered.
func (c *Call[F]) Current() (f F, suspended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.front, c.state != ""
}

// Face returns the face the call was started with.
func (c *Call[F]) Face() RoundFace[F] { return c.face }

// Usable reports whether the call can still ask the front (not ended nor
// given up), and whether a round is open.
func (c *Call[F]) Usable() (usable, suspended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.claimed && c.dead == nil, c.state != ""
}

// Caps returns the clientCapabilities the front's latest request declared.
func (c *Call[F]) Caps() wire.Capabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// Open returns the number of the back's requests waiting for answers.
func (c *Call[F]) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asks)
}

// Close stops every suspended call's timer and forgets them (the face is
// closing), and returns once an expiry already running has ended: after
// Close no face method is called from a timer. Close must not be called
// from a face method (it would wait for itself).
func (r *Rounds[F]) Close() {
	r.expiring.Close()
	r.mu.Lock()
	calls := r.byState
	r.byState = nil
	r.mu.Unlock()
	for _, c := range calls {
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
	}
	r.expiring.Wait()
}

func (r *Rounds[F]) forget(state string) {
	r.mu.Lock()
	delete(r.byState, state)
	r.mu.Unlock()
}

func (r *Rounds[F]) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return InputTTL
}

func (r *Rounds[F]) maxSuspended() int {
	if r.MaxSuspended > 0 {
		return r.MaxSuspended
	}
	return MaxSuspendedCalls
}

// suspended is the number of calls suspended; Call.mu may be held.
func (r *Rounds[F]) suspended() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byState)
}

func (r *Rounds[F]) maxInputs() int {
	if r.MaxInputs > 0 {
		return r.MaxInputs
	}
	return MaxRoundInputs
}
