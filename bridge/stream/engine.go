package stream

import (
	"context"
	"net/http"
	"time"
)

// An Engine is what the streams of one Handler share: the keepalive clock
// and the streams detached from net/http (detach.go), with their writers
// and hang-up watcher. Run ticks the clock; Close ends the detached
// streams and waits for them.
type Engine struct {
	ka       *clock        // keepalive ticks for every stream; nil if disabled
	every    time.Duration // the keepalive interval
	detached detachedStreams
}

// NewEngine returns an Engine whose quiet streams get a keepalive comment
// every keepalive (none if it is not positive). It starts nothing.
func NewEngine(keepalive time.Duration) *Engine {
	en := &Engine{every: keepalive}
	if keepalive > 0 {
		en.ka = newClock()
	}
	return en
}

// Run ticks the keepalive clock until ctx ends; without keepalives it
// returns at once.
func (en *Engine) Run(ctx context.Context) {
	if en.ka != nil {
		en.ka.run(ctx, en.every)
	}
}

// Pump copies sk's messages to rsp, in the caller's goroutine, until sk is
// complete, the client goes away (ctx), or stop or stop2 is closed (nil
// channels never fire). It writes keepalive comments on a quiet stream,
// turning a still-undecided response into SSE. rsp must not be
// detachable: PumpDetachable is for those.
func (en *Engine) Pump(ctx context.Context, rsp *Responder, sk *Sink, stop, stop2 <-chan struct{}) PumpResult {
	return pump(ctx, rsp, sk, en.ka, stop, stop2)
}

// Wait waits until every stream detached from net/http has ended (or ctx
// ends). http.Server.Shutdown does not wait for them — their connections
// are hijacked — so a graceful stop calls it after Shutdown, with the same
// deadline, before Close.
func (en *Engine) Wait(ctx context.Context) error { return en.detached.wait(ctx) }

// Close ends every detached stream as closing its connection would and
// waits for their goroutines and the writers.
func (en *Engine) Close() { en.detached.close() }

// Detached returns how many streams are detached now.
func (en *Engine) Detached() int { return en.detached.count() }

// DetachedTotal returns how many streams ever detached.
func (en *Engine) DetachedTotal() int64 { return en.detached.total.Load() }

// An Observer is a request's observation (serve's metrics, trace and
// access log) that a stream leaving net/http takes along: the
// ResponseWriter the Responder was made with hands it over (Observed), and
// the stream reports to it what it writes from then on. Its bytes are
// counted in the stream and reported once, by Finish: a write costs an
// addition, as it did in the observing ResponseWriter.
type Observer interface {
	Head(status int)                    // the stream wrote its own response head
	SSEOpened()                         // that head began an SSE stream
	Finish(out int64, sessionID string) // the stream ended, having written out bytes since it left; sessionID: the Mcp-Session-Id its response named
}

// Observed is a ResponseWriter that observes its request: HandOff returns
// the observation for a stream that leaves net/http, which finishes it;
// the ResponseWriter then records nothing itself.
type Observed interface {
	http.ResponseWriter
	HandOff() Observer
}
