package httpclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func TestPostRetries503WithRetryAfter(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if log.add(r) <= 2 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":1}`)
	})
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	defer resp.Close()
	if got := mustReadAll(t, resp); len(got) != 1 || got[0] != `{"id":1}` {
		t.Errorf("messages = %q", got)
	}
	if log.count() != 3 {
		t.Fatalf("server saw %d requests, want 3", log.count())
	}
	for i := 1; i < 3; i++ {
		// The exponential policy alone would wait about 200-450ms.
		if gap := log.times[i].Sub(log.times[i-1]); gap < 950*time.Millisecond {
			t.Errorf("gap before attempt %d = %v, want >= 1s (Retry-After)", i+1, gap)
		}
		if log.bodys[i] != reqBody {
			t.Errorf("attempt %d body = %q, want the full body again", i+1, log.bodys[i])
		}
	}
}

func TestPostRetries429WithoutRetryAfter(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if log.add(r) == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	resp.Close()
	if log.count() != 2 || resp.Kind != KindAccepted {
		t.Fatalf("server saw %d requests, Kind %v; want 2, accepted", log.count(), resp.Kind)
	}
}

func TestPostRetriesExhausted(t *testing.T) {
	for _, tt := range []struct {
		maxRetries int
		hits       int
	}{{1, 2}, {-1, 1}} {
		var log hitLog
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			log.add(r)
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "overloaded")
		})
		c := newClient(t, srv.URL)
		c.MaxRetries = tt.maxRetries
		_, err := c.Post(context.Background(), []byte(reqBody), nil)
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != 503 || string(se.Body) != "overloaded" {
			t.Errorf("MaxRetries %d: err = %v, want the 503 StatusError", tt.maxRetries, err)
		}
		if log.count() != tt.hits {
			t.Errorf("MaxRetries %d: server saw %d requests, want %d", tt.maxRetries, log.count(), tt.hits)
		}
	}
}

func TestPostOtherStatusNotRetried(t *testing.T) {
	var log hitLog
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		w.WriteHeader(http.StatusInternalServerError)
	})
	c := newClient(t, srv.URL)
	_, err := c.Post(context.Background(), []byte(reqBody), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 500 || log.count() != 1 {
		t.Errorf("err = %v after %d requests; want a 500 StatusError after 1", err, log.count())
	}
}

func TestPostRetryStopsWithContext(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Post(ctx, []byte(reqBody), nil)
	if err != context.DeadlineExceeded {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Post took %v despite the deadline", d)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPostRetriesDialError(t *testing.T) {
	var dials atomic.Int32
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := &Client{
		Endpoint:     "http://" + closedAddr(t) + "/mcp",
		HTTPClient:   &http.Client{Transport: tr},
		MaxRetries:   2,
		MaxRetryWait: 20 * time.Millisecond,
	}
	_, err := c.Post(context.Background(), []byte(reqBody), nil)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("err = %v, want a dial *net.OpError", err)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("dialled %d times, want 3 (1 + MaxRetries)", n)
	}
}

func TestPostConnectionResetNotRetried(t *testing.T) {
	for _, tt := range []struct{ name, partial string }{
		{"before the response", ""},
		{"mid response", "HTTP/1.1 200 OK\r\nContent-Type: applica"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log hitLog
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				log.add(r) // the whole request has arrived: it may have been executed
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				buf.WriteString(tt.partial)
				buf.Flush()
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // RST instead of FIN
				}
				conn.Close()
			})
			c := newClient(t, srv.URL)
			_, err := c.Post(context.Background(), []byte(reqBody), nil)
			if err == nil || isDialError(err) {
				t.Fatalf("Post = %v, want a non-dial error", err)
			}
			if log.count() != 1 {
				t.Errorf("server saw %d requests, want exactly 1: a request that reached the server must not be resent", log.count())
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999999999999", maxRetryAfter, true},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHintedBackOff(t *testing.T) {
	b := &hintedBackOff{BackOff: backoff.NewConstantBackOff(time.Second), max: 5 * time.Second}
	if d := b.NextBackOff(); d != time.Second {
		t.Errorf("without hint: %v", d)
	}
	b.setHint(3 * time.Second)
	if d := b.NextBackOff(); d != 3*time.Second {
		t.Errorf("with hint: %v", d)
	}
	if d := b.NextBackOff(); d != time.Second {
		t.Errorf("the hint must apply once: %v", d)
	}
	b.setHint(0)
	if d := b.NextBackOff(); d != 0 {
		t.Errorf("Retry-After: 0 must mean no wait: %v", d)
	}
	b.setHint(time.Minute)
	if d := b.NextBackOff(); d != 5*time.Second {
		t.Errorf("the cap must bound a hint: %v", d)
	}
	b.setHint(time.Minute)
	b.Reset()
	if d := b.NextBackOff(); d != time.Second {
		t.Errorf("Reset must drop the hint: %v", d)
	}
	stop := &hintedBackOff{BackOff: &backoff.StopBackOff{}, max: time.Second}
	stop.setHint(time.Millisecond)
	if d := stop.NextBackOff(); d != backoff.Stop {
		t.Errorf("a hint must not revive a stopped policy: %v", d)
	}
}
