package stdiohost

import "errors"

var (
	// ErrClosed is returned by Send after the child's stdin was closed,
	// by Close or because the child exited.
	ErrClosed = errors.New("stdiohost: child stdin closed")

	// ErrNoCommand is returned by Start for a nil or empty command.
	ErrNoCommand = errors.New("stdiohost: no command")
)
