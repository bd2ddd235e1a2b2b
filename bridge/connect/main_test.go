package connect

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// bridgeBin is the mcp-bridge binary, for tests that run it the way a host
// does (the Go SDK's CommandTransport).
var bridgeBin string

func TestMain(m *testing.M) {
	testmain.Run(m, map[string]string{"mcp-bridge": "./cmd/mcp-bridge"}, func(bins map[string]string) { bridgeBin = bins["mcp-bridge"] })
}

// host plays a stdio host against an in-process Bridge: it writes lines to
// the bridge's stdin and checks that every line the bridge writes is one
// valid JSON-RPC message.
type host struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string
	done   chan error
	mu     sync.Mutex
	closed bool
}

func startHost(t *testing.T, cfg Config) *host {
	t.Helper()
	return startHostLogging(t, cfg, false)
}

// startHostLogging is startHost; with ownLog, cfg.Logger is kept even
// under -v (a test that reads the log).
func startHostLogging(t *testing.T, cfg Config, ownLog bool) *host {
	t.Helper()
	// Era verdicts are cached per endpoint for the process; httptest
	// reuses ports, so a verdict of an earlier test must not leak in.
	remote.ForgetEra(cfg.URL)
	if testing.Verbose() && !ownLog {
		cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &host{t: t, in: inW, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		h.done <- b.Run(context.Background(), inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			l := sc.Text()
			checkLine(t, l)
			h.lines <- l
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		h.close()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run() = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after stdin closed")
		}
		for range h.lines {
		}
	})
	return h
}

// checkLine enforces the connect contract: stdout carries MCP messages only.
func checkLine(t *testing.T, l string) {
	if !json.Valid([]byte(l)) {
		t.Errorf("stdout line is not JSON: %.200q", l)
		return
	}
	var m wire.Message
	if err := wire.Parse([]byte(l), &m); err != nil || (m.Kind == wire.KindInvalid) {
		t.Errorf("stdout line is not a JSON-RPC message: %.200q", l)
	}
}

func (h *host) send(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s+"\n"); err != nil {
		h.t.Fatalf("writing to the bridge: %v", err)
	}
}

func (h *host) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.in.Close()
	}
}

// next returns the next line, failing after d.
func (h *host) next(d time.Duration) map[string]any {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatal("bridge output ended")
		}
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		return m
	case <-time.After(d):
		h.t.Fatalf("no output within %v", d)
		return nil
	}
}

// response waits for the response with the given id (as JSON text),
// collecting the other messages seen meanwhile.
func (h *host) response(id string, d time.Duration) (resp map[string]any, others []map[string]any) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := h.next(time.Until(deadline))
		b, _ := json.Marshal(m["id"])
		if _, isResp := m["method"]; !isResp && string(b) == id {
			return m, others
		}
		others = append(others, m)
	}
}

func errorMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return ""
	}
	s, _ := e["message"].(string)
	return s
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
