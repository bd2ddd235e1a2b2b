package connect

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
)

// runSignalled runs a Bridge on srv, sends line, waits for its answer (or,
// with arrived set, for that), then cancels Run's context the way a host's
// SIGTERM does, and returns the bridge's log.
func runSignalled(t *testing.T, srv *httptest.Server, line string, arrived chan struct{}) string {
	t.Helper()
	remote.ForgetEra(srv.URL)
	var log syncBuffer
	b, err := New(Config{URL: srv.URL, ShutdownTimeout: 30 * time.Second, Logger: zerolog.New(&log).Level(zerolog.InfoLevel)})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- b.Run(ctx, inR, outW)
		outW.Close()
	}()
	answered := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(outR)
		if sc.Scan() {
			close(answered)
		}
		for sc.Scan() {
		}
	}()
	io.WriteString(inW, line+"\n")
	if arrived == nil {
		arrived = answered
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run() = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	return log.String()
}

// (#21) A host that stops connect with a signal, nothing in flight: no
// "shutdown timeout" warning (it was logged at every normal stop, with
// in_flight=0). With a request in flight, it is.
func TestShutdownWarnsOnlyWithRequestsInFlight(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if strings.Contains(string(body), `"slow"`) {
			close(arrived)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		answer(w, r, body, `{"resultType":"complete","content":[]}`)
	}))
	defer srv.Close()
	defer close(release)
	for i := range 5 {
		if log := runSignalled(t, srv, modernCall("1", "x"), nil); strings.Contains(log, "shutdown timeout") {
			t.Fatalf("run %d: a stop with nothing in flight warned:\n%s", i, log)
		}
	}
	if log := runSignalled(t, srv, modernCall("1", "slow"), arrived); !strings.Contains(log, `"in_flight":1`) {
		t.Errorf("a stop with a request in flight did not warn about it:\n%s", log)
	}
}
