package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// An initialize that passed the shutdown check just before Close began
// reaches the session table after Close is waiting for the Handler's
// goroutines: it gets 503 (its child stopped at once), where adding to the
// WaitGroup being waited on made the runtime panic ("WaitGroup is reused
// before previous Wait has returned"; seen in CI through the gateway).
func TestInitializeDuringClose(t *testing.T) {
	for _, mode := range []SessionMode{SessionPerSession, SessionShared} {
		t.Run(string(mode), func(t *testing.T) {
			b := startBridge(t, Config{SessionMode: mode, ChildProtocol: ChildLegacy, Command: testChild()})
			b.BeginShutdown()
			b.srv.CloseClientConnections()
			b.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`
			var m wire.Message
			if err := wire.Parse([]byte(body), &m); err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			b.sessions.servePost(rec, req, &m) // past refused(), as a request already in flight
			if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "shutting down") {
				t.Fatalf("late initialize: %d %s, want 503 shutting down", rec.Code, rec.Body)
			}
			if n := b.sessions.count(); n != 0 {
				t.Errorf("%d sessions after Close", n)
			}
		})
	}
}
