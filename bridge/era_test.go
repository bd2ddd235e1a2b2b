package bridge

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEraDecidedOnce keeps era detection in one place: translate.Decide
// turns evidence (an answer, an error code, a transport's refusal) into a
// verdict, and serve and connect (its remote side, bridge/remote) only
// gather the evidence over their transports. It fails when either face reads era evidence itself again,
// as both did before (serve/probe.go and connect/era.go had diverging
// copies). In their non-test code it finds:
//
//   - a comparison or switch case on the error codes only a modern server
//     sends (-32020, -32021, -32022), or on a received message's
//     ErrorCode against -32601/-32602;
//   - a received result's ResultType() compared with "" (the test for a
//     2025-shaped answer);
//   - translate.PickModern (choosing the modern version from a peer's
//     list is the verdict's job);
//   - translate.Decide called, or a Decision's Confirm read: when an
//     answer is acted on, held back for a probe or switched on, and what
//     a probe's outcome means, is the machine's in translate/eradetect.go
//     (Observe, Settle, JudgeProbe, DiscoverReply/InitializeReply,
//     ProbeEras), written once for both faces.
//
// Producing those codes (answering a client with -32022) is not reading
// evidence; the one function that switches on them to map the bridge's
// own errors to HTTP statuses is listed in mayCompare.
func TestEraDecidedOnce(t *testing.T) {
	eraCodes := map[string]bool{"CodeHeaderMismatch": true, "CodeMissingCapability": true, "CodeUnsupportedVersion": true}
	answerCodes := map[string]bool{"CodeMethodNotFound": true, "CodeInvalidParams": true}
	mayCompare := map[string]bool{"stream.modernErrorStatus": true}
	isWire := func(e ast.Expr, names map[string]bool) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && x.Name == "wire" && names[s.Sel.Name]
	}
	isField := func(e ast.Expr, name string) bool {
		s, ok := e.(*ast.SelectorExpr)
		return ok && s.Sel.Name == name
	}
	isResultType := func(e ast.Expr) bool {
		c, ok := e.(*ast.CallExpr)
		return ok && len(c.Args) == 0 && isField(c.Fun, "ResultType")
	}
	isEmpty := func(e ast.Expr) bool {
		l, ok := e.(*ast.BasicLit)
		return ok && l.Kind == token.STRING && (l.Value == `""` || l.Value == "``")
	}
	for _, dir := range []string{"serve", "child", "connect", "remote", "stream"} {
		for _, g := range sourceFiles(t, dir) {
			fset, f := g.fset, g.f
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil || mayCompare[dir+"."+fn.Name.Name] {
					continue
				}
				bad := func(n ast.Node, what string) {
					t.Errorf("%s: %s reads era evidence (%s): let translate.Decide judge it", fset.Position(n.Pos()), fn.Name.Name, what)
				}
				var switchOnErrorCode []ast.Stmt
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SwitchStmt:
						if n.Tag != nil && isField(n.Tag, "ErrorCode") {
							switchOnErrorCode = append(switchOnErrorCode, n.Body.List...)
						}
					case *ast.BinaryExpr:
						if n.Op != token.EQL && n.Op != token.NEQ {
							return true
						}
						for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
							switch {
							case isWire(pair[0], eraCodes):
								bad(n, "compares a modern-only error code")
							case isField(pair[0], "ErrorCode") && isWire(pair[1], answerCodes):
								bad(n, "compares an answer's ErrorCode with -32601/-32602")
							case isResultType(pair[0]) && isEmpty(pair[1]):
								bad(n, "tests a result for the 2025 shape")
							}
						}
					case *ast.CaseClause:
						for _, e := range n.List {
							if isWire(e, eraCodes) {
								bad(e, "switches on a modern-only error code")
							}
						}
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok && x.Name == "translate" && n.Sel.Name == "PickModern" {
							bad(n, "picks the modern version from a peer's list")
						}
						if x, ok := n.X.(*ast.Ident); ok && x.Name == "translate" && n.Sel.Name == "Decide" {
							bad(n, "acts on a raw decision (translate.Observe, Settle, JudgeProbe and ProbeEras say what it means)")
						}
						if n.Sel.Name == "Confirm" {
							bad(n, "weighs weak evidence itself (translate.Observe holds it back for a probe)")
						}
					}
					return true
				})
				for _, s := range switchOnErrorCode {
					for _, e := range s.(*ast.CaseClause).List {
						if isWire(e, answerCodes) {
							bad(e, "switches on an answer's ErrorCode")
						}
					}
				}
			}
		}
	}
}

// TestStrategyChosenOnce keeps connect's relay mode one strategy value,
// chosen once per remote (connect/strategy.go), that call sites invoke. Before,
// eight call sites switched on currentMode(). In connect's non-test code
// it finds:
//
//   - the strategy in force (Bridge.how) read or set outside the few
//     functions that own it (connect/strategy.go, and New);
//   - a strategy value compared, type-switched or type-asserted (a switch
//     on the mode in another shape);
//   - passingThrough() (the one question about the mode that detection
//     needs) asked outside the detection machinery (era.go, detect.go);
//   - a currentMode function or a mode type coming back.
func TestStrategyChosenOnce(t *testing.T) {
	owners := map[string]bool{"strategy": true, "passingThrough": true, "switchMode": true, "New": true}
	detection := map[string]bool{"era.go": true, "detect.go": true, "strategy.go": true}
	isStrategyCall := func(e ast.Expr) bool {
		c, ok := e.(*ast.CallExpr)
		if !ok {
			return false
		}
		s, ok := c.Fun.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "strategy" && len(c.Args) == 0
	}
	for _, g := range sourceFiles(t, "connect") {
		fset, f, path := g.fset, g.f, g.path
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == "mode" {
						t.Errorf("%s: a mode type is back: the relay mode is one strategy value (connect/strategy.go)", fset.Position(ts.Pos()))
					}
				}
				continue
			case *ast.FuncDecl:
				if d.Name.Name == "currentMode" {
					t.Errorf("%s: currentMode is back: call sites invoke the strategy instead of switching on a mode", fset.Position(d.Pos()))
				}
				if d.Body == nil {
					continue
				}
				fn := d.Name.Name
				bad := func(n ast.Node, what string) {
					t.Errorf("%s: %s %s: invoke b.strategy() instead (connect/strategy.go)", fset.Position(n.Pos()), fn, what)
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SelectorExpr:
						if n.Sel.Name == "how" && !owners[fn] {
							bad(n, "reads the strategy in force directly")
						}
						if n.Sel.Name == "passingThrough" && !detection[filepath.Base(path)] {
							bad(n, "asks whether the bridge passes through")
						}
					case *ast.BinaryExpr:
						if (n.Op == token.EQL || n.Op == token.NEQ) && (isStrategyCall(n.X) || isStrategyCall(n.Y)) {
							bad(n, "compares the strategy")
						}
					case *ast.TypeSwitchStmt:
						ast.Inspect(n.Assign, func(m ast.Node) bool {
							if ta, ok := m.(*ast.TypeAssertExpr); ok && isStrategyCall(ta.X) {
								bad(n, "type-switches on the strategy")
							}
							return true
						})
						return true
					case *ast.TypeAssertExpr:
						if isStrategyCall(n.X) {
							bad(n, "type-asserts the strategy")
						}
					}
					return true
				})
			}
		}
	}
}

// TestExchangeSetOnce keeps a host request's traffic in one value chosen
// at its dispatch (connect/route.go's exchange): pass-through, detection,
// or the translating call that answers it. Before, translating calls
// installed hooks on connect's pending (final, other, onCancel, answered)
// one by one as they went. In connect's non-test code it finds:
//
//   - a field of func or chan type on pending (a hook coming back);
//   - a setHooks or setOnCancel function;
//   - pending's exchange (ex) assigned outside setExchange and resetWire;
//   - a pending made without an exchange (route and notify call it).
func TestExchangeSetOnce(t *testing.T) {
	setters := map[string]bool{"setExchange": true, "resetWire": true}
	sawPending := false
	for _, g := range sourceFiles(t, "connect") {
		fset, f := g.fset, g.f
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || ts.Name.Name != "pending" {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					sawPending = true
					for _, fld := range st.Fields.List {
						switch fld.Type.(type) {
						case *ast.FuncType, *ast.ChanType:
							t.Errorf("%s: pending has a hook field %s: a request's traffic goes to its one exchange (connect/route.go)", fset.Position(fld.Pos()), fld.Names[0].Name)
						}
					}
				}
			case *ast.FuncDecl:
				fn := d.Name.Name
				if fn == "setHooks" || fn == "setOnCancel" {
					t.Errorf("%s: %s is back: a request's exchange is set once, by setExchange", fset.Position(d.Pos()), fn)
				}
				if d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.AssignStmt:
						for _, l := range n.Lhs {
							if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "ex" && !setters[fn] {
								t.Errorf("%s: %s sets a request's exchange: use setExchange", fset.Position(n.Pos()), fn)
							}
						}
					case *ast.CompositeLit:
						if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "pending" {
							return true
						}
						hasEx := false
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "ex" {
									hasEx = true
								}
							}
						}
						if !hasEx {
							t.Errorf("%s: %s makes a pending without an exchange (ex: pass{b})", fset.Position(n.Pos()), fn)
						}
					}
					return true
				})
			}
		}
	}
	if !sawPending {
		t.Fatal("connect has no pending struct: update this test")
	}
}
