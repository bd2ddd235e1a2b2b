package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeConfigUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"a": {"url": "https://h/mcp", "headers": {"X": "${MCP_BRIDGE_TEST_UNSET_VAR}"}}}}`), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--config", good, "--", "memos"}, exitUsage, "--config and -- COMMAND are exclusive"},
		{[]string{"serve", "--config", good, "--path", "/x"}, exitUsage, "--path does not apply with --config"},
		{[]string{"serve", "--config", bad}, exitFailure, "environment variable MCP_BRIDGE_TEST_UNSET_VAR is not set"},
		{[]string{"serve", "--config", filepath.Join(dir, "missing.json")}, exitFailure, "missing.json"},
		{[]string{"serve", "--config", good, "--listen", "0.0.0.0:0"}, exitUsage, "reachable from other machines"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
