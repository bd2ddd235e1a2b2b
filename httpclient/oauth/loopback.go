package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// CallbackPath is the fixed path of the loopback redirect URI.
const CallbackPath = "/callback"

// callbackResult is the query of the authorization response.
type callbackResult struct {
	query url.Values
}

// A loopback is the redirect URI's listener (RFC 8252 §7.3): an HTTP server
// on 127.0.0.1 that takes the one authorization response carrying the
// expected state.
type loopback struct {
	ln     net.Listener
	srv    *http.Server
	state  string
	result chan callbackResult
	once   sync.Once
	done   chan struct{} // closed when Serve has returned
}

// listenLoopback listens on 127.0.0.1:port (0: any free port).
func listenLoopback(port int, state string) (*loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("oauth: callback listener on port %d: %w", port, err)
	}
	l := &loopback{ln: ln, state: state, result: make(chan callbackResult, 1), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, l.handle)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// redirectURI is the loopback redirect URI. RFC 8252 §8.3: "loopback IP
// literal" rather than localhost, so no resolver or firewall rule can send
// the code elsewhere.
func (l *loopback) redirectURI() string {
	return "http://" + l.ln.Addr().String() + CallbackPath
}

func (l *loopback) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

func (l *loopback) handle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// A response without our state is not ours (another tab, a stale
	// login, a forged request): refuse it and keep waiting.
	if q.Get("state") != l.state {
		http.Error(w, "This login link is stale or not for this login. Return to the terminal.", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	first := false
	l.once.Do(func() {
		first = true
		l.result <- callbackResult{query: q}
	})
	if !first {
		http.Error(w, "This login was already completed.", http.StatusConflict)
		return
	}
	if q.Get("error") != "" {
		fmt.Fprint(w, "<!doctype html><title>mcp-bridge</title><p>The login did not complete. Return to the terminal for details.")
		return
	}
	fmt.Fprint(w, "<!doctype html><title>mcp-bridge</title><p>Logged in. You can close this tab.")
}

// wait returns the authorization response, or an error when ctx ends.
func (l *loopback) wait(ctx context.Context) (url.Values, error) {
	select {
	case r := <-l.result:
		return r.query, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close stops the listener and joins its goroutine; the browser's request
// in flight, if any, gets a second to finish.
func (l *loopback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = l.srv.Close()
	}
	<-l.done
}
