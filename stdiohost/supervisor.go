package stdiohost

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"
)

// A Supervisor keeps one child running: it starts it, waits for it to end,
// and starts it again after a backoff. 2026-07-28 stdio §Unexpected
// termination: "If the server process exits unexpectedly, the client SHOULD
// restart it."
type Supervisor struct {
	// Start launches a new child. It is required. An error counts as a
	// failed start and is retried after the backoff.
	Start func() (*Host, error)

	// OnExit, if set, is called once a child is Done, before the backoff
	// wait and before the child is closed.
	OnExit func(h *Host)

	// InitialBackoff is the first restart delay. If zero, 250ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the restart delay. If zero, 30s.
	MaxBackoff time.Duration
	// StableAfter is how long a child must stay up for the backoff to start
	// over at InitialBackoff. If zero, 30s.
	StableAfter time.Duration

	Logger zerolog.Logger

	// Watch, if set, is the CrashWatch of the supervised command: while
	// it reports a crash loop, restarts are logged at debug level only.
	Watch *CrashWatch
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Run supervises children until ctx is done, then closes the current child
// (the stdio shutdown sequence) and returns ctx.Err().
func (s *Supervisor) Run(ctx context.Context) error {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(orDefault(s.InitialBackoff, 250*time.Millisecond)),
		backoff.WithMaxInterval(orDefault(s.MaxBackoff, 30*time.Second)),
		backoff.WithMaxElapsedTime(0), // a supervisor never gives up
	)
	stable := orDefault(s.StableAfter, 30*time.Second)
	for {
		h, err := s.Start()
		if err == nil {
			select {
			case <-ctx.Done():
				h.Close()
				return ctx.Err()
			case <-h.Done():
			}
			if s.OnExit != nil {
				s.OnExit(h)
			}
			h.Close()
			if time.Since(h.Started()) >= stable {
				b.Reset()
			}
		} else {
			s.Logger.Error().Err(err).Msg("child failed to start")
		}
		wait := b.NextBackOff()
		ev := s.Logger.Warn()
		if s.Watch.Quiet() {
			ev = s.Logger.Debug()
		}
		ev.Int64("restart_in_ms", wait.Milliseconds()).Msg("restarting child")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
