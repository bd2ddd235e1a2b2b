package bridge

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// TestListenServedOnce keeps the listen streams of a 2026-07-28 front on a
// legacy back in one place, translate.ListenHub: it acknowledges a
// subscriptions/listen and tags each notification it delivers with the
// listener's subscription id. serve (listen.go) and connect
// (modernhost_listen.go) had a copy each. In their non-test code (and
// bridge/remote's, connect's remote side) it finds
// what only a copy would need:
//
//   - "notifications/subscriptions/acknowledged" other than in a
//     comparison (a face may recognise the modern back's acknowledgement,
//     not build one);
//   - the subscription id key (wire.MetaSubscriptionID, or the literal)
//     other than as an argument of wire.Field or wire.WithoutFields (a
//     face may read or strip it, not tag a notification with it).
func TestListenServedOnce(t *testing.T) {
	const ack = "notifications/subscriptions/acknowledged"
	const subID = "io.modelcontextprotocol/subscriptionId"
	isWire := func(e ast.Expr, names ...string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		if !ok || x.Name != "wire" {
			return false
		}
		for _, n := range names {
			if s.Sel.Name == n {
				return true
			}
		}
		return false
	}
	for _, dir := range []string{"serve", "child", "connect", "remote"} {
		for _, g := range sourceFiles(t, dir) {
			fset, f := g.fset, g.f
			allowed := map[ast.Node]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if n.Op == token.EQL || n.Op == token.NEQ {
						allowed[n.X], allowed[n.Y] = true, true
					}
				case *ast.CaseClause:
					for _, e := range n.List {
						allowed[e] = true
					}
				case *ast.CallExpr:
					if isWire(n.Fun, "Field", "WithoutFields") {
						for _, a := range n.Args {
							allowed[a] = true
						}
					}
				}
				return true
			})
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BasicLit:
					if n.Kind != token.STRING || allowed[n] {
						return true
					}
					switch {
					case strings.Contains(n.Value, ack):
						t.Errorf("%s: builds a listen acknowledgement: translate.ListenHub does", fset.Position(n.Pos()))
					case strings.Contains(n.Value, subID):
						t.Errorf("%s: tags a message with a subscription id: translate.ListenHub does", fset.Position(n.Pos()))
					}
				case *ast.SelectorExpr:
					if isWire(n, "MetaSubscriptionID") && !allowed[n] {
						t.Errorf("%s: tags a message with a subscription id: translate.ListenHub does", fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
}
