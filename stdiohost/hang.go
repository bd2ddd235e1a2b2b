package stdiohost

import (
	"errors"
	"os"
	"time"
)

// ErrHung is returned by Send when a write to the child's stdin did not
// finish within Options.WriteTimeout: the child stopped reading, and the
// Host has killed its process tree.
var ErrHung = errors.New("stdiohost: child stopped reading its stdin (write timed out); killed")

// deadlineWriter gives every write to the child's stdin a deadline. lineio
// frames the messages and serializes the writes; the deadline is the
// Host's, which owns the pipe.
type deadlineWriter struct {
	f *os.File
	d time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	// A pipe that cannot take deadlines (ErrNoDeadline, on platforms
	// without pollable pipes) is written without one.
	_ = w.f.SetWriteDeadline(time.Now().Add(w.d))
	return w.f.Write(p)
}

// hang takes a child whose stdin write timed out for hung: a child that
// stops reading would otherwise leave every request to it waiting forever,
// with the bridge holding their bodies. The whole tree is killed; the
// exit then takes the usual path (Exited, Done, the supervisor's restart).
func (h *Host) hang() {
	if h.hung.Swap(true) {
		return
	}
	if h.cancel != nil {
		h.log.Warn().Int64("write_timeout_ms", h.opts.WriteTimeout.Milliseconds()).Msg("in-process server stopped reading its stdin; cancelling it")
		h.cancel()
		return
	}
	h.log.Warn().Int64("write_timeout_ms", h.opts.WriteTimeout.Milliseconds()).Msg("child stopped reading its stdin; killing its process tree")
	h.tree.kill()
}

// Hung reports whether the Host killed the child because a write to its
// stdin timed out.
func (h *Host) Hung() bool { return h.hung.Load() }
