package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
)

// The in-process RoundTripper streams: the response's head and its first
// event reach the client while the handler still runs; closing the body
// ends the handler's context, as a client's hang-up does; a handler
// that writes nothing answers 200; after the Group closes, nothing is
// served.
func TestHandlerTransport(t *testing.T) {
	var life lifecycle.Group
	ended := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quiet" {
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: "+string(body)+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		ended <- r.Context().Err()
	})
	hc := &http.Client{Transport: &handlerTransport{h: h, life: &life}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://localhost/mcp", strings.NewReader("hello"))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("head = %d %v", resp.StatusCode, resp.Header)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: hello\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	resp.Body.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler's context ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("closing the body did not end the handler's context")
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", "http://localhost/quiet", nil)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("quiet handler: %d %q", resp.StatusCode, b)
	}
	resp.Body.Close()
	life.Close()
	life.Wait()
	if _, err := hc.Do(req); err == nil {
		t.Error("a request after the Group closed was served")
	}
}
