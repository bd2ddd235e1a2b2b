package httpclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestResume(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: replayed\n\nid: ev-8\ndata: {\"id\":1}\n\n")
	})
	c := newClient(t, srv.URL)
	c.SetSessionID("sess-1")
	c.Header = http.Header{"Authorization": {"Bearer t"}}
	start := time.Now()
	resp, err := c.Resume(context.Background(), "ev-7", 50*time.Millisecond, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	defer resp.Close()
	if resp.Kind != KindSSE {
		t.Errorf("Kind = %v", resp.Kind)
	}
	if resp.LastEventID() != "ev-7" {
		t.Errorf("LastEventID before any event = %q, want the resumption point ev-7", resp.LastEventID())
	}
	if got := mustReadAll(t, resp); !slices.Equal(got, []string{"replayed", `{"id":1}`}) {
		t.Errorf("messages = %q", got)
	}
	if resp.LastEventID() != "ev-8" {
		t.Errorf("LastEventID = %q, want ev-8", resp.LastEventID())
	}
	if gap := log.times[0].Sub(start); gap < 50*time.Millisecond {
		t.Errorf("request sent after %v, want >= the 50ms delay", gap)
	}
	r := log.reqs[0]
	for k, want := range map[string]string{
		"Accept":               "text/event-stream",
		"Last-Event-Id":        "ev-7",
		"Mcp-Session-Id":       "sess-1",
		"Authorization":        "Bearer t",
		"Mcp-Protocol-Version": "2025-11-25",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if r.Method != http.MethodGet {
		t.Errorf("method = %s", r.Method)
	}
}

func TestResumeErrors(t *testing.T) {
	tests := []struct {
		name  string
		h     http.HandlerFunc
		check func(error) bool
	}{
		{"405", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) },
			func(err error) bool { return err == ErrNoStream }},
		{"404", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) },
			func(err error) bool {
				var se *StatusError
				return errors.As(err, &se) && se.StatusCode == 404 && se.Method == "GET"
			}},
		{"JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
		}, func(err error) bool { return errors.Is(err, ErrUnexpectedContentType) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.h)
			c := newClient(t, srv.URL)
			resp, err := c.Resume(context.Background(), "1", 0, nil)
			if resp != nil || !tt.check(err) {
				t.Errorf("Resume = %v, %v", resp, err)
			}
		})
	}
}

func TestResumeDelayHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &Client{Endpoint: "http://127.0.0.1:1/"}
	if _, err := c.Resume(ctx, "1", time.Hour, nil); err != context.Canceled {
		t.Errorf("Resume = %v, want context.Canceled", err)
	}
}

func TestListenNoStream(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	c := newClient(t, srv.URL)
	err := c.Listen(context.Background(), nil, func([]byte) { t.Error("unexpected message") })
	if err != ErrNoStream || log.count() != 1 {
		t.Errorf("Listen = %v after %d requests, want ErrNoStream after 1", err, log.count())
	}
}

func TestListenTerminalStatuses(t *testing.T) {
	for _, code := range []int{http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusBadRequest} {
		var log hitLog
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			log.add(r)
			w.WriteHeader(code)
		})
		c := newClient(t, srv.URL)
		err := c.Listen(context.Background(), nil, func([]byte) {})
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != code || log.count() != 1 {
			t.Errorf("%d: Listen = %v after %d requests, want a StatusError after 1", code, err, log.count())
		}
	}
}

// TestListenReconnects walks Listen through SEP-1699 polling: the server
// primes, sends a retry field and closes; Listen must come back after exactly
// that delay with Last-Event-ID, then recover from a 500, and stop on 404.
func TestListenReconnects(t *testing.T) {
	var (
		log   hitLog
		mu    sync.Mutex
		ended []time.Time // when each stream handler returned
	)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := log.add(r)
		defer func() {
			mu.Lock()
			ended = append(ended, time.Now())
			mu.Unlock()
		}()
		switch n {
		case 1:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: p1\nretry: 40\ndata:\n\n: keep-alive\n\nevent: ping\n\nid: 1\ndata: a\n\n")
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 2\nevent: notice\ndata: b\n\n")
		case 3:
			w.WriteHeader(http.StatusInternalServerError)
		case 4:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: c\n\n")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	c := newClient(t, srv.URL)
	c.SetSessionID("sess-1")
	var msgs []string
	err := c.Listen(context.Background(), http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, func(msg []byte) {
		msgs = append(msgs, string(msg))
	})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("Listen = %v, want the 404 StatusError", err)
	}
	if !slices.Equal(msgs, []string{"a", "b", "c"}) {
		t.Errorf("messages = %q", msgs)
	}
	if log.count() != 5 {
		t.Fatalf("server saw %d requests, want 5", log.count())
	}
	wantLast := []string{"", "1", "2", "2", "2"}
	for i, want := range wantLast {
		h := log.header(i)
		if got := h.Get("Last-Event-ID"); got != want {
			t.Errorf("request %d Last-Event-ID = %q, want %q", i+1, got, want)
		}
		if h.Get("Mcp-Session-Id") != "sess-1" || h.Get("Accept") != "text/event-stream" || h.Get("Mcp-Protocol-Version") != "2025-11-25" {
			t.Errorf("request %d headers = %v", i+1, h)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < 5; i++ {
		// Every reconnect waits at least the server's retry of 40ms; the
		// first two come after streams that delivered events, so they wait
		// exactly that (plus scheduling), not the 250ms backoff.
		gap := log.times[i].Sub(ended[i-1])
		if gap < 40*time.Millisecond {
			t.Errorf("reconnect %d after %v, want >= 40ms (retry field)", i, gap)
		}
	}
}

func TestListenCancelMidRead(t *testing.T) {
	srv, disconnected := openSSEServer(t, "data: hello\n\n")
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Listen(ctx, nil, func(msg []byte) { got <- string(msg) })
	}()
	if msg := waitFor(t, got, "the first message"); msg != "hello" {
		t.Errorf("message = %q", msg)
	}
	cancel() // Listen is now blocked reading the open stream
	if err := waitFor(t, done, "Listen to return"); err != context.Canceled {
		t.Errorf("Listen = %v, want context.Canceled", err)
	}
	waitFor(t, disconnected, "the server to see the disconnect")
}
