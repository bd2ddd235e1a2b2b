package main

import (
	"strings"
	"testing"
)

// A glob path.Match cannot read is a usage error at start, as it is in a
// --config file's tools filter, not a filter that silently matches nothing.
func TestConnectToolFilterBadGlob(t *testing.T) {
	for _, flag := range []string{"--tools-allow", "--tools-deny"} {
		code, stdout, stderr := runCLI("connect", flag, "rm_[", "http://127.0.0.1:1/mcp")
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, `glob "rm_["`) {
			t.Errorf("%s rm_[: exit %d, stdout %q, stderr %q; want a usage error naming the glob", flag, code, stdout, stderr)
		}
	}
}
