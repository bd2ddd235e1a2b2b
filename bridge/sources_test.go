package bridge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goFile is one non-test Go file of a package under bridge/, parsed.
type goFile struct {
	path string
	src  []byte
	fset *token.FileSet
	f    *ast.File
}

// sourceFiles reads and parses the non-test Go files of the package in dir
// (relative to bridge/), for the structure tests that check where a piece
// of translation may live. A package with no Go files fails the test: a
// moved package must not make a check pass by finding nothing.
func sourceFiles(t *testing.T, dir string) []goFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []goFile
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, goFile{path: path, src: src, fset: fset, f: f})
	}
	return out
}
