package telemetry

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoPrometheusClient: the exposition is this package's own;
// prometheus/common (and client_model) parse /metrics in tests only, and
// client_golang is gone: none of them reaches the binary (binary size,
// idle RSS).
func TestBinaryLinksNoPrometheusClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/mcp-bridge/mcp-bridge/cmd/mcp-bridge").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/prometheus/") || strings.HasPrefix(pkg, "github.com/beorn7/") {
			t.Errorf("the binary links %s", pkg)
		}
	}
}
