package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// Real peers: the Go SDK's conformance everything-server and the bundled
// examples/memos server, built once for the package.
var bins = map[string]string{}

func TestMain(m *testing.M) {
	if os.Getenv(testChildEnv) != "" {
		os.Exit(runTestChild())
	}
	testmain.Run(m, map[string]string{
		"everything": "github.com/modelcontextprotocol/go-sdk/conformance/everything-server",
		"memos":      "./examples/memos",
	}, func(b map[string]string) { bins = b })
}

// testBridge is a Handler behind an httptest server.
type testBridge struct {
	*Handler
	URL string // the MCP endpoint
	srv *httptest.Server
	log *syncBuffer
}

func commandFor(argv ...string) func() *exec.Cmd {
	return func() *exec.Cmd { return exec.Command(argv[0], argv[1:]...) }
}

// startBridge serves argv (a stdio MCP server) and waits until /readyz says
// ready. cfg.Command is filled in from argv.
func startBridge(t *testing.T, cfg Config, argv ...string) *testBridge {
	t.Helper()
	logs := &syncBuffer{}
	if cfg.Command == nil && cfg.Run == nil {
		cfg.Command = commandFor(argv...)
	}
	cfg.Logger = zerolog.New(io.MultiWriter(logs, testmain.TestLog{T: t})).Level(zerolog.DebugLevel)
	if cfg.TerminateDelay == 0 {
		cfg.TerminateDelay = 500 * time.Millisecond
	}
	if cfg.RestartBackoff == 0 {
		cfg.RestartBackoff = 20 * time.Millisecond
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	srv := httptest.NewServer(h)
	b := &testBridge{Handler: h, URL: srv.URL + cfg.path(), srv: srv, log: logs}
	t.Cleanup(func() {
		h.BeginShutdown()
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	waitReady(t, srv.URL)
	return b
}

// httptestServer serves h on loopback until the test ends.
func httptestServer(t *testing.T, h *Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.BeginShutdown()
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	return srv.URL
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("bridge not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint, not syncing goroutines
	}
}

type syncBuffer = testmain.SyncBuffer

// modernMeta is the 2026-07-28 _meta envelope of raw test requests.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}}`

// rawPost sends body with the given headers (the standard ones are added
// unless present) and returns the response with its body read.
func rawPost(t *testing.T, url, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcpRequest(ctx, http.MethodPost, url, body, hdr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, b
}

// mcpRequest is a request to an MCP endpoint with the headers every MCP
// client sends (Content-Type when there is a body, Accept), then hdr: a
// "Host" entry sets the Host, an empty value removes a header.
func mcpRequest(ctx context.Context, method, url, body string, hdr map[string]string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	return req
}

// modernHeaders are the request metadata headers of a modern request.
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// sseData returns the data payloads of an SSE body (priming events,
// which carry none, are skipped).
func sseData(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" { // "": a priming event
			out = append(out, d)
		}
	}
	return out
}

// messages returns the JSON-RPC messages of a response body, JSON or SSE.
func messages(t *testing.T, resp *http.Response, body []byte) []map[string]any {
	t.Helper()
	var raw []string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = sseData(body)
	} else {
		raw = []string{string(body)}
	}
	var out []map[string]any
	for _, r := range raw {
		var m map[string]any
		if err := json.Unmarshal([]byte(r), &m); err != nil {
			t.Fatalf("not JSON: %q", r)
		}
		out = append(out, m)
	}
	return out
}
