//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// (issue 9, comparison) The conformance suite's auth client scenarios with
// the same TS SDK host launching mcp-remote 0.15.1 instead of connect
// (drivers/conformance-client.mjs --via mcp-remote: its bundled xdg-open
// falls back to $BROWSER, set to testdata/browser; a fresh
// MCP_REMOTE_CONFIG_DIR per run; the CIMD URL, the pre-registered client
// and client credentials passed with its own flags). This is a
// measurement: it records mcp-remote's counts for docs/interop.md and
// fails only if nothing could run at all.
func TestConformanceClientAuthMCPRemote(t *testing.T) {
	art := artifactDir(t)
	driver := filepath.Join(env.interopDir, "drivers", "conformance-client.mjs")
	logs := filepath.Join(art, "mcp-remote-logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| scenario | mcp-remote 0.15.1 |\n|---|---|\n")
	pass, ran := 0, 0
	t0 := time.Now()
	for _, s := range clientScenarios {
		if !strings.HasPrefix(s, "auth/") {
			continue
		}
		r := runClientScenario(art, logs, driver, "mcp-remote", s)
		ran++
		if r.Passed {
			pass++
		}
		cell := clientCell(r)
		if !r.Passed {
			cell += " — " + firstFailure(r)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", s, cell)
	}
	fmt.Fprintf(&b, "| **scenarios passing** | **%d of %d** |\n| wall time | %.1f s |\n", pass, ran, time.Since(t0).Seconds())
	_ = os.WriteFile(filepath.Join(art, "conformance-client-mcp-remote.md"), []byte(b.String()), 0o644)
	t.Logf("conformance 0.1.16 auth client scenarios through mcp-remote 0.15.1:\n%s", b.String())
	if pass == 0 {
		t.Errorf("no auth scenario passed through mcp-remote: the harness, not mcp-remote, is probably broken")
	}
}

// firstFailure names the first failed check of a run, or why it ended.
func firstFailure(r *clientRun) string {
	for _, c := range r.Checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			return c.ID
		}
	}
	if r.Exit != 0 {
		return fmt.Sprintf("client exit %d", r.Exit)
	}
	return "?"
}
