package bridge

import (
	"go/ast"
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
	for _, dir := range []string{"serve", "child", "connect"} {
		uses := false
		for _, g := range sourceFiles(t, dir) {
			fset, file := g.fset, g.f
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
		// bridge/child holds no 2025 session (serve's front does): it is
		// only searched for a copy.
		if !uses && dir != "child" {
			t.Errorf("bridge/%s does not use bridge/translate/legacysession", dir)
		}
	}
}
