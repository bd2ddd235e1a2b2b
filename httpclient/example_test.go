package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// Example posts a request to a legacy server that answers with an SSE stream
// (a progress notification, then the response) and assigns a session id.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Mcp-Session-Id", "1868a90c")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\ndata:\n\n") // priming event
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n")
		io.WriteString(w, "id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n")
	}))
	defer srv.Close()

	c := &httpclient.Client{Endpoint: srv.URL + "/mcp"}
	defer c.CloseIdleConnections()

	ctx := context.Background()
	resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		http.Header{"MCP-Protocol-Version": {"2025-11-25"}})
	var se *httpclient.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		fmt.Println("session expired: initialize again")
		return
	} else if err != nil {
		fmt.Println("post:", err)
		return
	}
	defer resp.Close()

	fmt.Println("kind:", resp.Kind, "session:", c.SessionID())
	for {
		msg, err := resp.Next() // msg is valid until the next call
		if err == io.EOF {
			break
		}
		if err != nil {
			// A broken stream can be resumed from resp.LastEventID() with
			// c.Resume(ctx, resp.LastEventID(), resp.RetryDelay(), h).
			fmt.Println("stream:", err)
			return
		}
		fmt.Println(string(msg))
	}
	fmt.Println("last event id:", resp.LastEventID())
	// Output:
	// kind: sse session: 1868a90c
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}
	// {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
	// last event id: 2
}

// ExampleClient_Listen runs the standalone GET stream until the context
// ends; a server without one answers 405, reported as ErrNoStream.
func ExampleClient_Listen() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer srv.Close()
	c := &httpclient.Client{Endpoint: srv.URL}
	defer c.CloseIdleConnections()

	err := c.Listen(context.Background(), nil, func(msg []byte) {
		fmt.Println("server message:", string(msg))
	})
	if errors.Is(err, httpclient.ErrNoStream) {
		fmt.Println("no GET stream; server messages arrive only on POST responses")
	}
	// Output:
	// no GET stream; server messages arrive only on POST responses
}
