package telemetry

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksClientGolang: /metrics is prometheus/client_golang's
// (issue 25: the library people expect instead of a hand-written
// exposition), so the binary links its registry and HTTP handler.
func TestBinaryLinksClientGolang(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/mcp-bridge/mcp-bridge/cmd/mcp-bridge").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"github.com/prometheus/client_golang/prometheus", "github.com/prometheus/client_golang/prometheus/promhttp"} {
		found := false
		for _, pkg := range deps {
			found = found || pkg == want
		}
		if !found {
			t.Errorf("the binary does not link %s", want)
		}
	}
}
