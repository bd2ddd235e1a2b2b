package testmain

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"
)

// ServeTLS serves h over TLS with cfg the way serve's command does: an
// http.Server on a tls.NewListener on loopback, closed and joined when the
// test ends. It returns host:port.
func ServeTLS(t *testing.T, h http.Handler, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(tls.NewListener(ln, cfg))
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}
