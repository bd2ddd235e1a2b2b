package gateway

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A server of the file whose child needs 12 s to start serves a 2026-07-28
// client on its route as soon as it answers (within 17 s of the start),
// with the default start timeout; its /readyz says 503, then 200.
func TestGatewaySlowServerRoute(t *testing.T) {
	file := fmt.Sprintf(`{"mcpServers": {"slow": {"command": %q, "args": ["-start-delay", "12s"]}}}`, bins["memos"])
	began := time.Now()
	gw := startGateway(t, file)
	ready := gw.URL + "/servers/slow/readyz"
	resp, err := http.Get(ready)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s while the child starts: %d, want 503", ready, resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+Path("slow"), "")
	callOK(t, ctx, cs, probes["memos"])
	took := time.Since(began)
	t.Logf("first 2026-07-28 call on the route answered %v after start", took.Round(time.Millisecond))
	if took > 17*time.Second {
		t.Errorf("answered %v after start, want within 17s", took)
	}
	resp, err = http.Get(ready)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s after the child answered: %d", ready, resp.StatusCode)
	}
}

// mcpBridge.servers.<name>.childStartTimeout is that server's start
// timeout.
func TestServerChildStartTimeout(t *testing.T) {
	file := parse(t, `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}, "mcpBridge": {"servers": {"a": {"childStartTimeout": "2m"}}}}`)
	g := &Gateway{}
	g.cfg.Base.ChildStartTimeout = 30 * time.Second
	if got := g.serverConfig(file, file.Servers["a"]).ChildStartTimeout; got != 2*time.Minute {
		t.Errorf("a: %v, want 2m", got)
	}
	if got := g.serverConfig(file, file.Servers["b"]).ChildStartTimeout; got != 30*time.Second {
		t.Errorf("b: %v, want the command line's 30s", got)
	}
}
