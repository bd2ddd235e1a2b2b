package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request _meta as sent by the article's demo client.
const reqMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"memos-demo-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}`

// reqMetaElicit declares the elicitation capability.
const reqMetaElicit = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// serverMeta is how every modern result ends.
const serverMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memos-example-adapter","version":"1.0.0"}}`

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness drives run() in-process through pipes.
type harness struct {
	t      *testing.T
	ctx    context.Context
	in     *io.PipeWriter
	lines  chan string
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

func startServer(t *testing.T, args ...string) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, ctx: ctx, in: inW, lines: make(chan string, 1024), stderr: &lockedBuffer{}, done: make(chan struct{})}
	go func() {
		h.code = run(ctx, inR, outW, h.stderr, args)
		inR.CloseWithError(errors.New("server exited"))
		outW.Close()
		close(h.done)
	}()
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() {
			for range h.lines {
			}
		}()
		select {
		case <-h.done:
		case <-ctx.Done():
			t.Errorf("server did not exit; stderr:\n%s", h.stderr.String())
		}
		cancel()
		if t.Failed() {
			t.Logf("server stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

func (h *harness) send(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.in, l+"\n"); err != nil {
			h.t.Fatalf("write %q: %v", l, err)
		}
	}
}

// sendRaw writes bytes without a trailing newline.
func (h *harness) sendRaw(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

func (h *harness) next() string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("stdout closed while waiting for a line")
		}
		return l
	case <-h.ctx.Done():
		h.t.Fatalf("timed out waiting for a line")
	}
	return ""
}

func (h *harness) expect(want string) {
	h.t.Helper()
	if got := h.next(); got != want {
		h.t.Fatalf("unexpected line\n got: %s\nwant: %s", got, want)
	}
}

// roundTrip sends one line and returns the next output line.
func (h *harness) roundTrip(line string) string {
	h.t.Helper()
	h.send(line)
	return h.next()
}

func (h *harness) closeInput() { h.in.Close() }

// wait waits for run to return and gives its exit code.
func (h *harness) wait() int {
	h.t.Helper()
	select {
	case <-h.done:
		return h.code
	case <-h.ctx.Done():
		h.t.Fatalf("timed out waiting for exit")
	}
	return -1
}

// rest returns all remaining output lines after the server exited.
func (h *harness) rest() []string {
	h.t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-h.ctx.Done():
			h.t.Fatalf("timed out draining output")
		}
	}
}

// mreq builds a modern request; params is the params body without _meta.
func mreq(id, method, params string) string {
	return mreqMeta(id, method, params, reqMeta)
}

func mreqMeta(id, method, params, meta string) string {
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s%s}}`, id, method, params, meta)
}

// mcall builds a modern tools/call; args is a JSON object.
func mcall(id, tool, args string) string {
	return mreq(id, "tools/call", fmt.Sprintf(`"name":%q,"arguments":%s`, tool, args))
}

func lcall(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func initialize(id, version, caps string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"test","version":"1.0.0"}}}`, id, version, caps)
}

// quoteJSON encodes s as a JSON string without HTML escaping.
func quoteJSON(s string) string {
	b, err := encodeCompact(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// modernResult builds the exact line of a modern tools/call result.
func modernResult(id, text, structured string, isError bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":%s}]`, id, quoteJSON(text))
	if structured != "" {
		b.WriteString(`,"structuredContent":` + structured)
	}
	if isError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString("," + serverMeta + "}}")
	return b.String()
}

func legacyResult(id, text, structured string, isError bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]`, id, quoteJSON(text))
	if structured != "" {
		b.WriteString(`,"structuredContent":` + structured)
	}
	if isError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString("}}")
	return b.String()
}

// structuredOf extracts result.structuredContent from a response line.
func structuredOf(t *testing.T, line string) json.RawMessage {
	t.Helper()
	var resp struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Content           []contentBlock  `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatalf("bad response %s: %v", line, err)
	}
	if resp.Result.IsError {
		t.Fatalf("unexpected tool error: %s", line)
	}
	return resp.Result.StructuredContent
}

// memoNames lists the memo names of a memo_list_memos response line.
func memoNames(t *testing.T, line string) ([]string, string) {
	t.Helper()
	var res struct {
		Memos         []memoView `json:"memos"`
		NextPageToken string     `json:"nextPageToken"`
	}
	if err := json.Unmarshal(structuredOf(t, line), &res); err != nil {
		t.Fatalf("bad structuredContent in %s: %v", line, err)
	}
	names := []string{}
	for _, m := range res.Memos {
		names = append(names, m.Name)
	}
	return names, res.NextPageToken
}
