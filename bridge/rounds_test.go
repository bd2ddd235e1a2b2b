package bridge

import (
	"go/ast"
	"testing"
)

// TestInputRoundsOnce keeps the input-round machine (a 2026-07-28 front
// over a 2025 back: translate/suspension.go) in one place. Both faces had
// a copy (serve/mrtr.go, connect/modernhost_call.go), whose constants
// drifted and of which one panicked on a re-suspension race the other did
// not have. In serve's and connect's non-test functions (bridge/remote's
// too, connect's remote side) it finds what only
// the machine does: minting a request state (translate.NewState),
// building an InputRequiredResult (translate.InputRequired), timing a
// suspension (translate.InputTTL).
func TestInputRoundsOnce(t *testing.T) {
	machineOnly := map[string]string{
		"NewState":      "mints a request state",
		"InputRequired": "builds an InputRequiredResult",
		"InputTTL":      "times a suspended call",
	}
	for _, dir := range []string{"serve", "child", "connect", "remote"} {
		for _, g := range sourceFiles(t, dir) {
			fset, f := g.fset, g.f
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					s, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := s.X.(*ast.Ident); ok && x.Name == "translate" && machineOnly[s.Sel.Name] != "" {
						t.Errorf("%s: %s %s: input rounds are translate.Rounds' (suspension.go)", fset.Position(n.Pos()), fn.Name.Name, machineOnly[s.Sel.Name])
					}
					return true
				})
			}
		}
	}
}
