package serve

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// firstChunk is the most a body buffer starts with. A body grows with the
// bytes that actually arrive, never with what Content-Length announces: 40
// connections announcing 33 MB and sending nothing used to hold 1.3 GB.
const firstChunk = 64 << 10

// errBodyStalled is returned when no byte of a request body arrived for the
// read timeout.
var errBodyStalled = errors.New("serve: request body stalled")

// readBody reads a request body of at most limit bytes (a
// *http.MaxBytesError above it). Each read must make progress within
// timeout (if positive), so a client that stalls mid-body is dropped
// instead of holding a goroutine and a buffer for good.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	var rc *http.ResponseController
	if timeout > 0 {
		rc = http.NewResponseController(w)
		// Clear the deadline afterwards: net/http's background read, which
		// watches for the client going away while the response is written,
		// would take it for a disconnect.
		defer rc.SetReadDeadline(time.Time{})
	}
	size := int64(512)
	if n := r.ContentLength; n > 0 {
		size = min(n+1, firstChunk, limit+1) // +1: see EOF in the same read
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow: amortized doubling
		}
		if rc != nil {
			// An error means the connection cannot take deadlines (not
			// HTTP/1 over a net.Conn); the server's own timeouts apply.
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, errBodyStalled
		case err != nil:
			return nil, err
		}
	}
}
