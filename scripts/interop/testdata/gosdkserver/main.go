//go:build interop

// gosdkserver is a tiny MCP server built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk v1.8.0) serving Streamable HTTP in
// the SDK's stateless mode (StreamableHTTPOptions{Stateless: true}), which is
// the mode in which the SDK speaks 2026-07-28. The interop tests put
// `mcp-bridge connect` in front of it.
//
// Tools:
//
//	echo {message}              "Echo: MESSAGE"
//	progress {steps, delayMs}   one notifications/progress per step (when the
//	                            request carries a progressToken), then "progress done: N steps"
//	toggle_tool                 adds or removes the tool "extra_tool", which makes the SDK
//	                            send notifications/tools/list_changed to open
//	                            subscriptions/listen streams
//	ask_name                    asks for the caller's name through an input_required
//	                            result (an elicitation form with one "name" field), as
//	                            go-sdk's conformance everything-server does; the retry
//	                            that carries the accepted answer gets "Hello, NAME!"
//	ask_sampling {prompt}       the same with a sampling/createMessage input request;
//	                            the retry gets "Sampling response: TEXT"
//
// With -modern-only (the default) the server is restricted to 2026-07-28
// by the SDK's own ServerOptions.SupportedProtocolVersions: server/discover
// lists only 2026-07-28, and a 2025-era client is turned away the SDK's
// way (it answers the legacy initialize with 2025-11-25 "so that the client
// disconnects", then refuses the requests that follow). Without it, the SDK
// also serves 2025-era clients, statelessly.
//
// With -stateful the server keeps 2025 sessions instead (the SDK's default
// handler, which speaks no 2026-07-28) and has one more tool:
//
//	sample_progress {steps, delayMs}
//	                            asks the client for sampling mid-call (a
//	                            server-to-client request on the call's stream),
//	                            then sends one progress notification per step,
//	                            delayMs (default 20) apart and before the result,
//	                            and returns "sampled, then N steps"
//
// Usage: gosdkserver -http 127.0.0.1:PORT [-modern-only=false | -stateful]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const modernVersion = "2026-07-28"

var (
	httpAddr   = flag.String("http", "", "listen address (host:port), required")
	modernOnly = flag.Bool("modern-only", true, "refuse every request that is not 2026-07-28")
	stateful   = flag.Bool("stateful", false, "keep 2025 sessions (no 2026-07-28); adds sample_progress")
)

func main() {
	flag.Parse()
	if *httpAddr == "" {
		fmt.Fprintln(os.Stderr, "usage: gosdkserver -http ADDR [-modern-only=false]")
		os.Exit(2)
	}
	var opts mcp.ServerOptions
	if *modernOnly && !*stateful {
		opts.SupportedProtocolVersions = []string{modernVersion}
	}
	name := "interop-gosdk-stateless"
	if *stateful {
		name = "interop-gosdk-stateful"
	}
	server := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, &opts)
	registerTools(server)
	if *stateful {
		registerStatefulTools(server)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: !*stateful})
	log.Printf("gosdkserver (stateful=%v, modern-only=%v) listening on %s", *stateful, *modernOnly && !*stateful, *httpAddr)
	log.Fatal(http.ListenAndServe(*httpAddr, logRequests(h)))
}

// logRequests logs one line per HTTP request (method, JSON-RPC method,
// protocol version header, status), for the test's artifacts.
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 4<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal(body, &m)
		rw := &statusWriter{ResponseWriter: w, status: 200}
		t0 := time.Now()
		h.ServeHTTP(rw, r)
		log.Printf("%s %s method=%q version=%q -> %d (%v)", r.Method, r.URL.Path, m.Method,
			r.Header.Get("MCP-Protocol-Version"), rw.status, time.Since(t0).Round(time.Millisecond))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type echoIn struct {
	Message string `json:"message"`
}

type progressIn struct {
	Steps   int `json:"steps,omitempty"`
	DelayMs int `json:"delayMs,omitempty"`
}

type samplingIn struct {
	Prompt    string `json:"prompt,omitempty"`
	MaxTokens int    `json:"maxTokens,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func registerTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echoes the message."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "progress", Description: "Sends one progress notification per step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			steps, delay := in.Steps, in.DelayMs
			if steps <= 0 {
				steps = 3
			}
			if delay <= 0 {
				delay = 20
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= steps; i++ {
				if token != nil {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(steps),
						Message: fmt.Sprintf("step %d of %d", i, steps),
					}); err != nil {
						return nil, nil, err
					}
				}
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(delay) * time.Millisecond):
				}
			}
			return text(fmt.Sprintf("progress done: %d steps", steps)), nil, nil
		})
	var mu sync.Mutex
	extra := false
	mcp.AddTool(server, &mcp.Tool{Name: "toggle_tool", Description: "Adds or removes extra_tool (tools/list_changed)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			extra = !extra
			if extra {
				mcp.AddTool(server, &mcp.Tool{Name: "extra_tool", Description: "Present after toggle_tool."},
					func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
						return text("extra"), nil, nil
					})
				return text("extra_tool added"), nil, nil
			}
			server.RemoveTools("extra_tool")
			return text("extra_tool removed"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask_name", Description: "Asks for the caller's name (input_required elicitation)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			if resp, ok := req.Params.InputResponses["user_name"].(*mcp.ElicitResult); ok && resp != nil && resp.Action == "accept" {
				if name, _ := resp.Content["name"].(string); name != "" {
					return text(fmt.Sprintf("Hello, %s!", name)), nil, nil
				}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"user_name": &mcp.ElicitParams{
					Message: "What is your name?",
					RequestedSchema: &jsonschema.Schema{Type: "object",
						Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}},
						Required:   []string{"name"}},
				},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask_sampling", Description: "Asks the client's LLM (input_required sampling)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in samplingIn) (*mcp.CallToolResult, any, error) {
			if resp, ok := req.Params.InputResponses["completion"].(*mcp.CreateMessageWithToolsResult); ok && resp != nil {
				for _, c := range resp.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						return text("Sampling response: " + tc.Text), nil, nil
					}
				}
				return text("Sampling response: (non-text)"), nil, nil
			}
			prompt := in.Prompt
			if prompt == "" {
				prompt = "Say hello."
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"completion": &mcp.CreateMessageParams{
					Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
					MaxTokens: 50,
				},
			}}, nil, nil
		})
}

// registerStatefulTools adds the tools that need a 2025 session: a
// server-to-client request on the call's stream.
func registerStatefulTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "sample_progress", Description: "Asks for sampling mid-call, then reports progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			if _, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 20,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
			}); err != nil {
				return nil, nil, err
			}
			steps, delay := in.Steps, in.DelayMs
			if steps <= 0 {
				steps = 3
			}
			if delay <= 0 {
				delay = 20
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= steps && token != nil; i++ {
				// Paced like the progress tool: a TypeScript client handles a
				// notification that shares a read with the response after it.
				time.Sleep(time.Duration(delay) * time.Millisecond)
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(steps),
				}); err != nil {
					return nil, nil, err
				}
			}
			time.Sleep(time.Duration(delay) * time.Millisecond)
			return text(fmt.Sprintf("sampled, then %d steps", steps)), nil, nil
		})
}
