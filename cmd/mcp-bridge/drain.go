package main

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
)

// A drainer is what stopServing drains: one serve.Handler, or the
// gateway of serve --config.
type drainer interface {
	BeginDrain()
	Refuse()
	SessionsEnded() <-chan struct{}
	BeginShutdown()
	InFlight() int
	WaitDetached(ctx context.Context) error
}

var _ drainer = (*serve.Handler)(nil)

// stopServing is serve's shutdown sequence after the first signal
// (docs/deploy.md, "The drain sequence"):
//
//  1. /readyz answers 503 at once; with --drain-delay every request is still
//     served for that long, so a load balancer's health check moves traffic
//     away before anything is refused.
//  2. New work is refused (503, which the shipped balancer configurations
//     retry on another replica); a 2025 session keeps working, since its
//     state lives only here, until it ends or --shutdown-timeout passes.
//  3. The listener closes; requests in flight finish within what is left of
//     --shutdown-timeout.
//
// Without --drain-delay steps 1 and 2 take no time and sessions are not
// waited for: a Ctrl-C on a single host stops at once. A second signal cuts
// every wait short. Handler.Close, afterwards, stops the children.
func stopServing(h drainer, srv *http.Server, f *serveFlags, drain bool, sigs <-chan os.Signal, log zerolog.Logger) {
	hurry := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		select {
		case <-sigs:
			log.Warn().Msg("second signal: stopping now")
			close(hurry)
		case <-done:
		}
	})

	h.BeginDrain()
	if drain && f.drainDelay > 0 {
		// Responses from now on close their connections, so that few idle
		// ones are left for a balancer to reuse when the listener closes.
		srv.SetKeepAlivesEnabled(false)
		log.Info().Int64("drain_delay_ms", f.drainDelay.Milliseconds()).Msg("draining: /readyz answers 503, requests still served")
		wait(f.drainDelay, hurry)
		h.Refuse()
		log.Info().Msg("drained: refusing new work; 2025 sessions go on until they end")
		t := time.NewTimer(f.shutdown)
		select {
		case <-h.SessionsEnded():
		case <-t.C:
			log.Warn().Msg("shutdown timeout: ending the 2025 sessions still open")
		case <-hurry:
		}
		t.Stop()
	}
	h.BeginShutdown()
	ctx, cancel := context.WithTimeout(context.Background(), f.shutdown)
	defer cancel()
	wg.Go(func() {
		select {
		case <-hurry:
			cancel()
		case <-ctx.Done():
		}
	})
	// Streams detached from net/http (their connections hijacked) are not
	// waited for by Shutdown: they get the rest of the same deadline.
	err := srv.Shutdown(ctx)
	if err == nil {
		err = h.WaitDetached(ctx)
	}
	if err != nil {
		// Only requests in flight are worth a warning; a connection that
		// outlived the deadline with none (a client slow to send its body,
		// a stream that had nothing left to say) is closed as planned.
		if n := h.InFlight(); n > 0 {
			log.Warn().Int("in_flight", n).Msg("shutdown timeout: abandoning in-flight requests")
		} else {
			log.Debug().Err(err).Msg("shutdown timeout: closing the connections still open; no request was in flight")
		}
	}
}

// wait returns after d, or earlier when hurry is closed.
func wait(d time.Duration, hurry <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-hurry:
	}
}
