//go:build linux

package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Caller makes echo calls against one target.
type Caller interface {
	// Setup performs the handshake of the era (legacy: initialize and
	// notifications/initialized, reused by every call).
	Setup(ctx context.Context) error
	// Call makes one tools/call and waits for its final response.
	Call(ctx context.Context, s Spec) (Outcome, error)
	Close() error
}

// Outcome is what one call returned.
type Outcome struct {
	Progress int // progress notifications received for it
	Bytes    int // size of the result member
}

// NewTransport is the load generator's one HTTP transport: keep-alive, and
// as many idle connections per host as calls in flight.
func NewTransport(maxConns int) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		// 30 s: 10,000 streams dial at once, and on a loaded machine some
		// handshakes wait seconds for the accept queue.
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns + 16,
		MaxIdleConnsPerHost: maxConns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
}

// HTTPCaller speaks Streamable HTTP: 2026-07-28 (stateless, every request
// with the _meta envelope and the Mcp-Method/Mcp-Name headers) or legacy (a
// session from initialize, reused by every call).
type HTTPCaller struct {
	Client *http.Client
	URL    string
	Legacy bool

	session string
	version string
	ids     atomic.Int64
}

func (c *HTTPCaller) nextID() int64 { return c.ids.Add(1) }

func (c *HTTPCaller) newRequest(ctx context.Context, body []byte, method, name string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	if c.Legacy {
		if c.version != "" {
			h["Mcp-Protocol-Version"] = []string{c.version}
		}
		if c.session != "" {
			h["Mcp-Session-Id"] = []string{c.session}
		}
	} else {
		h["Mcp-Protocol-Version"] = []string{"2026-07-28"}
		h["Mcp-Method"] = []string{method}
		if name != "" {
			h["Mcp-Name"] = []string{name}
		}
	}
	return req, nil
}

// Setup initializes a legacy session; modern needs nothing.
func (c *HTTPCaller) Setup(ctx context.Context) error {
	if !c.Legacy {
		return nil
	}
	c.session, c.version = "", ""
	req, err := c.newRequest(ctx, initializeRequest(c.nextID()), "initialize", "")
	if err != nil {
		return err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	final, _, err := readAnswer(resp, nil)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(final, &r); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	c.version = r.Result.ProtocolVersion
	if c.version == "" {
		c.version = "2025-11-25"
	}
	req, err = c.newRequest(ctx, []byte(initializedNotification), "notifications/initialized", "")
	if err != nil {
		return err
	}
	resp, err = c.Client.Do(req)
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Call posts one tools/call.
func (c *HTTPCaller) Call(ctx context.Context, s Spec) (Outcome, error) {
	id := c.nextID()
	body := appendCall(make([]byte, 0, 320), id, s, !c.Legacy)
	req, err := c.newRequest(ctx, body, "tools/call", "echo")
	if err != nil {
		return Outcome{}, err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return Outcome{}, err
	}
	var progress int
	final, n, err := readAnswer(resp, func() { progress++ })
	if err != nil {
		return Outcome{Progress: progress}, err
	}
	out, err := checkFinal(final, n, progress, s)
	putBuf(final)
	return out, err
}

func checkFinal(final []byte, n, progress int, s Spec) (Outcome, error) {
	t, err := scanTop(final)
	if err != nil {
		return Outcome{Progress: progress}, err
	}
	if t.err.ok() {
		return Outcome{Progress: progress}, rpcError(t.get(final, t.err))
	}
	if !t.result.ok() {
		return Outcome{Progress: progress}, fmt.Errorf("response without result: %.200s", final)
	}
	size := t.result.end - t.result.start
	if size < s.Size {
		return Outcome{Progress: progress}, fmt.Errorf("result of %d bytes, want at least %d", size, s.Size)
	}
	_ = n
	return Outcome{Progress: progress, Bytes: size}, nil
}

// Close ends a legacy session.
func (c *HTTPCaller) Close() error {
	if !c.Legacy || c.session == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	resp, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.session = ""
	return nil
}

// readAnswer reads a POST's answer: one JSON body, or an SSE stream whose
// progress notifications are counted (onProgress) until the response
// arrives. It returns the response message and its size.
func readAnswer(resp *http.Response, onProgress func()) ([]byte, int, error) {
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if strings.HasPrefix(ct, "text/event-stream") {
		msg, n, err := readSSE(resp.Body, onProgress)
		if err == nil {
			// Read to the end of the stream so that the connection is
			// reused; a server that keeps the stream open gets a second.
			t := time.AfterFunc(time.Second, func() { resp.Body.Close() })
			io.Copy(io.Discard, resp.Body)
			t.Stop()
		}
		return msg, n, err
	}
	var buf []byte
	if resp.ContentLength > 0 {
		buf = getBuf(int(resp.ContentLength))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, 0, err
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, 0, err
		}
		buf = b
	}
	io.Copy(io.Discard, resp.Body)
	return buf, len(buf), nil
}

func readSSE(body io.Reader, onProgress func()) ([]byte, int, error) {
	r := bufio.NewReaderSize(body, 32<<10)
	data := takeBuf()
	var scratch []byte
	defer func() { putBuf(scratch) }()
	for {
		line, err := readLine(r, &scratch)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, 0, errors.New("SSE stream ended before the response")
			}
			return nil, 0, err
		}
		if len(line) == 0 {
			if len(data) == 0 {
				continue
			}
			t, err := scanTop(data)
			if err != nil {
				return nil, 0, err
			}
			switch {
			case t.id.ok() && (t.result.ok() || t.err.ok()):
				return data, len(data), nil
			case t.methodIs(data, "notifications/progress"):
				if onProgress != nil {
					onProgress()
				}
			}
			data = data[:0]
			continue
		}
		if bytes.HasPrefix(line, []byte("data:")) {
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
}

// readLine returns one line without its \n or \r\n, of any length. The
// slice is valid until the next call. A line longer than r's buffer is
// assembled in *scratch.
func readLine(r *bufio.Reader, scratch *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		if *scratch == nil {
			*scratch = takeBuf()
		}
		long := append((*scratch)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			long = append(long, line...)
		}
		*scratch = long
		line = long
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			err = nil
		} else {
			return nil, err
		}
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}
