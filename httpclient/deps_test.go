package httpclient

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports enforces the package's place in the module: it imports no
// other package of this module but its outbound policy (a leaf), and
// nothing that runs processes.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "github.com/mcp-bridge/mcp-bridge/httpclient/outbound" {
			continue
		}
		if strings.HasPrefix(imp, "github.com/mcp-bridge/mcp-bridge") || imp == "os/exec" || imp == "os" {
			t.Errorf("httpclient must not import %s", imp)
		}
	}
}
