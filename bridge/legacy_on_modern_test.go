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

// TestLegacySessionPlayedOnce keeps the machine that plays a 2025 session
// in front of a 2026-07-28 peer in bridge/translate/legacysession. serve
// (session_translate.go) and connect (legacyhost*.go) had a copy each,
// which drifted (one checked capabilities, bounded rounds and
// subscriptions, the other not). It fails when either face builds the
// session's answers itself again: in their non-test code, a call of
//
//   - translate.InitializeFromDiscover (initialize answered from
//     server/discover),
//   - translate.RetryFields or translate.LegacyInputParams (an input round
//     turned into requests to the legacy side, and its answers into the
//     retry),
//
// or a package that does not use legacysession.
func TestLegacySessionPlayedOnce(t *testing.T) {
	machine := map[string]bool{"InitializeFromDiscover": true, "RetryFields": true, "LegacyInputParams": true}
	for _, dir := range []string{"serve", "connect"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		uses := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				if strings.HasSuffix(imp.Path.Value, `/bridge/translate/legacysession"`) {
					uses = true
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				s, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := s.X.(*ast.Ident); ok && x.Name == "translate" && machine[s.Sel.Name] {
					t.Errorf("%s: translate.%s: a legacy session on a modern peer is legacysession's to play", fset.Position(s.Pos()), s.Sel.Name)
				}
				return true
			})
		}
		if !uses {
			t.Errorf("bridge/%s does not use bridge/translate/legacysession", dir)
		}
	}
}
