package httpclient

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer starts a loopback server that is closed when the test ends.
func newServer(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a Client for url with the default HTTP client, whose idle
// connections are closed when the test ends (before the server closes).
func newClient(t testing.TB, url string) *Client {
	t.Helper()
	c := &Client{Endpoint: url}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// readAll calls Next until it fails and returns the messages (copied) and
// the final error.
func readAll(t testing.TB, r *Response) ([]string, error) {
	t.Helper()
	var msgs []string
	for {
		msg, err := r.Next()
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, string(msg))
	}
}

// mustReadAll is readAll that requires a clean io.EOF.
func mustReadAll(t testing.TB, r *Response) []string {
	t.Helper()
	msgs, err := readAll(t, r)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Next: %v after %q, want io.EOF", err, msgs)
	}
	return msgs
}

// sseHandler answers with body as an event stream.
func sseHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

// openSSEServer starts a server whose one stream sends body and then stays
// open until the client goes away; gone is closed once the server has seen
// that.
func openSSEServer(t testing.TB, body string) (srv *httptest.Server, gone <-chan struct{}) {
	t.Helper()
	disconnected := make(chan struct{})
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(disconnected)
	})
	return srv, disconnected
}

// hitLog records the requests a server received.
type hitLog struct {
	mu    sync.Mutex
	reqs  []*http.Request
	times []time.Time
	bodys []string
}

func (l *hitLog) add(r *http.Request) int {
	b, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
	l.times = append(l.times, time.Now())
	l.bodys = append(l.bodys, string(b))
	return len(l.reqs)
}

func (l *hitLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

func (l *hitLog) header(i int) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reqs[i].Header
}

// waitFor fails the test if ch does not deliver within a generous bound; it
// only guards against hangs, it does not synchronise.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
