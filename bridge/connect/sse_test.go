package connect

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// sseRemote serves goSDKServer over the Go SDK's HTTP+SSE handler
// (2024-11-05 transport), with a "block" tool that runs until release is
// closed.
func sseRemote(t *testing.T) (srv *httptest.Server, release chan struct{}, started chan struct{}) {
	srv, release, started, _ = sseRemoteServer(t)
	return srv, release, started
}

// sseCounts counts the streams an SSE remote opened and the
// notifications/initialized it accepted (one per session).
type sseCounts struct{ streams, initialized atomic.Int32 }

// sseRemoteServer is sseRemote that also counts streams and sessions.
func sseRemoteServer(t *testing.T) (srv *httptest.Server, release chan struct{}, started chan struct{}, counts *sseCounts) {
	t.Helper()
	release, started = make(chan struct{}), make(chan struct{}, 4)
	server := goSDKServer()
	counts = new(sseCounts)
	mcp.AddTool(server, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			counts.streams.Add(1)
		}
		var body []byte
		if r.Method == http.MethodPost {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"notifications/initialized"`)) {
			counts.initialized.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv, release, started, counts
}

// A 2025 host on an HTTP+SSE server, by the fallback (auto) and pinned:
// list, calls with progress, sampling mid-call, list_changed.
func TestSSERemoteLegacyHost(t *testing.T) {
	for name, flags := range map[string][]string{
		"auto":   nil,
		"pinned": {"--transport", "sse"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			srv, _, _ := sseRemote(t)
			var c counter
			cs := connectThroughBridge(t, ctx, srv.URL, flags, "2025-11-25", clientOptions(&c))
			checkBasics(t, ctx, cs, &c)
			checkSampleAndListChanged(t, ctx, cs, &c, "notifications/tools/list_changed on the SSE stream")
		})
	}
}

// A host pinned to 2026-07-28 on an HTTP+SSE server gets the translation of
// any 2025 remote.
func TestSSERemoteModernHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, _, _ := sseRemote(t)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL, nil, "", clientOptions(&c))
	modernHostChecks(t, ctx, cs, &c, "sdk-remote")
}

// The stream breaks with a call in flight: the call gets an error (no
// resumption in this transport), and the bridge re-establishes the session
// on a new stream by itself (the host's handshake replayed), before the
// host's next request.
func TestSSERemoteStreamBreaks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, _, started, counts := sseRemoteServer(t)
	var c counter
	cs := connectThroughBridge(t, ctx, srv.URL, []string{"--transport", "sse"}, "2025-11-25", clientOptions(&c))
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := counts.streams.Load(); n != 1 {
		t.Fatalf("%d streams opened, want 1", n)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the call never started")
	}
	srv.CloseClientConnections()
	select {
	case err := <-errc:
		// The stream's end, or the POST's own when the server had not
		// answered it yet: either way an error, not a hang.
		if err == nil || !strings.Contains(err.Error(), "mcp-bridge: ") {
			t.Errorf("call across the break = %v, want the bridge's error", err)
		}
	case <-ctx.Done():
		t.Fatal("the call in flight got no answer when the stream broke")
	}
	// The new stream opens before the handshake is replayed on it: a
	// request in between would meet a session not yet initialized.
	waitFor(t, "a new stream and session without a host request", func() bool {
		return counts.streams.Load() == 2 && counts.initialized.Load() == 2
	})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 3 {
		t.Fatalf("ListTools after the break = %v, %v; want the session re-established", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
	if err != nil || textOf(res) != "echo: again" {
		t.Fatalf("echo after the break = %v, %v", res, err)
	}
}

// Against an SSE-only server (an Express app answers "Cannot POST /sse"),
// --transport streamable-http fails with a hint at --transport sse.
func TestSSEOnlyServerHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Cannot "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	cmd := exec.Command(bridgeBin, "connect", "--transport", "streamable-http", "--retries", "0", srv.URL+"/sse")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}` + "\n")
	cmd.Stderr = testmain.TestLog{T: t}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if !strings.Contains(string(out), "try --transport sse") || !strings.Contains(string(out), "HTTP 404") {
		t.Errorf("answer %s lacks the hint", out)
	}
}
