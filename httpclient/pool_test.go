package httpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// With many calls in flight, the connections of one burst serve the next:
// the idle pool keeps as many as were in use (issue 13: above 64 in flight
// every call dialed and closed a connection).
func TestIdlePoolFollowsInFlight(t *testing.T) {
	const inFlight = 300 // above the old per-host (64) and total (100) caps
	var dials atomic.Int64
	var arrived sync.WaitGroup
	var release atomic.Pointer[chan struct{}]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived.Done()
		<-*release.Load() // every call of the round is in flight at once
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	round := func() int64 {
		before := dials.Load()
		ch := make(chan struct{})
		release.Store(&ch)
		arrived.Add(inFlight)
		var done sync.WaitGroup
		for range inFlight {
			done.Go(func() {
				resp, err := c.Post(context.Background(), []byte(reqBody), nil)
				if err != nil {
					t.Error(err)
					return
				}
				mustReadAll(t, resp)
				resp.Close()
			})
		}
		arrived.Wait()
		close(ch)
		done.Wait()
		return dials.Load() - before
	}
	if n := round(); n != inFlight {
		t.Fatalf("first round: %d connections, want %d", n, inFlight)
	}
	// A connection is back in the pool a moment after its body was read,
	// so a few calls of the next round may still dial; the old caps made
	// at least inFlight-100 of them do so.
	if n := round(); n >= inFlight/2 {
		t.Errorf("second round dialed %d new connections for %d calls in flight, want (nearly) none", n, inFlight)
	} else {
		t.Logf("second round: %d new connections for %d calls in flight", n, inFlight)
	}
}

// A TLS server that offers HTTP/2 by ALPN gets HTTP/2: one connection
// multiplexes the calls in flight.
func TestHTTP2WhenOffered(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"proto":"`+r.Proto+`"}}`)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	// The default transport, trusting the test server's certificate.
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c.httpClient().Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	msgs := mustReadAll(t, resp)
	if len(msgs) != 1 || msgs[0] != `{"jsonrpc":"2.0","id":1,"result":{"proto":"HTTP/2.0"}}` {
		t.Errorf("got %q, want the call made over HTTP/2", msgs)
	}
}

// A small JSON body is read into a small buffer, whatever larger buffers
// earlier responses left in the pool: with 64 KiB for every response,
// 1,024 calls in flight held 64 MiB and re-made (and zeroed) 64 KiB per
// call whenever the GC had emptied the pool (issue 13).
func TestSmallJSONBodySmallBuffer(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 200<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Big") != "" {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"`))
			w.Write(big)
			w.Write([]byte(`"}}`))
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	call := func(h http.Header) int {
		resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), h)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Close()
		if _, err := resp.Next(); err != nil {
			t.Fatal(err)
		}
		return cap(*resp.jsonBuf)
	}
	if n := call(http.Header{"X-Big": {"1"}}); n < len(big) {
		t.Fatalf("a %d-byte body read into a %d-byte buffer", len(big), n)
	}
	for i := range 20 {
		if n := call(nil); n > smallJSON {
			t.Fatalf("call %d: a 36-byte body held a %d-byte buffer, want ≤ %d", i, n, smallJSON)
		}
	}
}
