//go:build linux

package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// StartSSE opens an HTTP+SSE (2024-11-05) stream at sseURL and returns a
// caller on it: messages are POSTed to the URL the stream's endpoint event
// names, and every answer, progress notification and server request comes
// back on the stream, read by the same reader a stdio child's output has
// (StdioCaller). The transport is always a session: Setup initializes.
func StartSSE(ctx context.Context, client *http.Client, sseURL string) (*StdioCaller, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, sseURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: HTTP %d", sseURL, resp.StatusCode)
	}
	br := bufio.NewReaderSize(resp.Body, 256<<10)
	endpoint, err := readEndpoint(br)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %w", sseURL, err)
	}
	base, _ := url.Parse(sseURL)
	msgURL, err := base.Parse(endpoint)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	target := msgURL.String()
	c := &StdioCaller{
		Legacy:  true,
		in:      resp.Body,
		sse:     true,
		pending: map[int64]*stdioCall{},
		done:    make(chan struct{}),
	}
	c.post = func(msg []byte) error {
		req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(msg))
		if err != nil {
			return err
		}
		req.Header["Content-Type"] = []string{"application/json"}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: HTTP %d", target, resp.StatusCode)
		}
		return nil
	}
	go c.read(br)
	return c, nil
}

// readEndpoint reads the stream up to its endpoint event and returns the
// event's data.
func readEndpoint(r *bufio.Reader) (string, error) {
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("no endpoint event: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:") && event == "endpoint":
			return strings.TrimSpace(line[len("data:"):]), nil
		}
	}
}

// firstSSEAnswer opens the stream, initializes and makes one call as soon
// as the spawned server lets it, and returns the caller and how long after
// the start the answer came.
func firstSSEAnswer(ctx context.Context, client *http.Client, cfg SuiteConfig, p *Proc) (*StdioCaller, time.Duration, error) {
	deadline := p.Started.Add(cfg.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return nil, 0, errors.New("the server exited")
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sc, err := StartSSE(cctx, client, cfg.URL)
		if err == nil {
			err = sc.Setup(cctx)
			if err == nil {
				_, err = sc.Call(cctx, Spec{Size: cfg.Size})
			}
			if err == nil {
				cancel()
				return sc, time.Since(p.Started), nil
			}
			sc.Close()
		}
		cancel()
		last = err
		time.Sleep(2 * time.Millisecond)
	}
	return nil, 0, fmt.Errorf("no answer within %s: %v", cfg.StartTimeout, last)
}
