package aggregate

import (
	"strings"
	"testing"
)

// FuzzURIRouting: a rewritten URI always routes back to its server and
// URI, and template matching never claims more than the URI holds.
func FuzzURIRouting(f *testing.F) {
	f.Add("alpha", "file:///same", "file:///{path}")
	f.Add("a/b c%", "mcp-bridge://x/y", "{a}")
	f.Add("s", "", "x{")
	f.Fuzz(func(t *testing.T, server, uri, tmpl string) {
		if server != "" {
			s, u, ok := splitPrefixed(prefixedURI(server, uri))
			if !ok || s != server || u != uri {
				t.Fatalf("round trip of (%q, %q): (%q, %q, %v)", server, uri, s, u, ok)
			}
		}
		if n := templateMatch(tmpl, uri); n > len(uri) || (n >= 0 && !strings.HasPrefix(uri, tmpl[:n])) {
			t.Fatalf("templateMatch(%q, %q) = %d", tmpl, uri, n)
		}
	})
}
