package main

import (
	"fmt"
	"strings"
	"time"
)

// A hand-written recursive-descent parser for a small CEL subset:
//
//	expr    = or
//	or      = and { "||" and }
//	and     = rel { "&&" rel }
//	rel     = add { ("=="|"!="|"<"|"<="|">"|">="|"in") add }
//	add     = unary { ("+"|"-") unary }
//	unary   = "!" unary | "-" unary | member
//	member  = primary { "." method "(" args ")" }
//	primary = "(" expr ")" | string | int | true | false | "[" [expr {"," expr}] "]"
//	        | now | duration(string) | timestamp(string) | size(expr) | field | variable
//
// Types are checked while parsing, so evaluation cannot fail.

const (
	maxFilterLen   = 4096
	maxFilterDepth = 100
)

var filterFields = map[string]ftype{
	"content": tString, "creator": tString, "visibility": tString,
	"created_ts": tTime, "updated_ts": tTime,
	"pinned": tBool, "has_task_list": tBool, "has_link": tBool, "has_code": tBool, "has_incomplete_tasks": tBool,
	"tags": tList,
}

var visibilities = []string{"VISIBILITY_UNSPECIFIED", "PRIVATE", "PROTECTED", "PUBLIC"}

// filterExpr is a parsed filter; a nil *filterExpr matches everything.
type filterExpr struct{ root fnode }

func (f *filterExpr) match(m *memo, now time.Time) bool {
	if f == nil {
		return true
	}
	return f.root.eval(&evalEnv{m: m, now: now}).b
}

// parseFilter parses src; an empty filter yields (nil, nil).
func parseFilter(src string) (f *filterExpr, err error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if len(src) > maxFilterLen {
		return nil, fmt.Errorf("filter is longer than %d bytes", maxFilterLen)
	}
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*filterError)
			if !ok {
				panic(r)
			}
			f, err = nil, fe
		}
	}()
	p := &parser{toks: lex(src)}
	root := p.parseOr()
	p.requireBool(root)
	if t := p.peek(); t.kind != tokEOF {
		failf("unexpected %s at position %d", t.describe(), t.pos)
	}
	return &filterExpr{root: root}, nil
}

type parser struct {
	toks  []token
	i     int
	depth int
	scope []string // macro variables, innermost last
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == s
}

func (p *parser) expectOp(s string) {
	if t := p.next(); t.kind != tokOp || t.text != s {
		failf("expected '%s' but found %s at position %d", s, t.describe(), t.pos)
	}
}

func (p *parser) enter() {
	if p.depth++; p.depth > maxFilterDepth {
		failf("expression is nested too deeply")
	}
}

func (p *parser) leave() { p.depth-- }

// requireBool rejects non-boolean conditions, e.g. a bare `visibility`.
func (p *parser) requireBool(n fnode) {
	if n.typ() == tBool {
		return
	}
	switch x := n.(type) {
	case *fieldNode:
		failf("expected a comparison after %s", x.name)
	case *varNode:
		failf("expected a comparison after %s", x.name)
	}
	failf("expected a condition but found %s (%s)", n.describe(), n.typ())
}

func (p *parser) parseOr() fnode {
	l := p.parseAnd()
	for p.isOp("||") {
		p.next()
		p.requireBool(l)
		r := p.parseAnd()
		p.requireBool(r)
		l = &logicNode{and: false, l: l, r: r}
	}
	return l
}

func (p *parser) parseAnd() fnode {
	l := p.parseRel()
	for p.isOp("&&") {
		p.next()
		p.requireBool(l)
		r := p.parseRel()
		p.requireBool(r)
		l = &logicNode{and: true, l: l, r: r}
	}
	return l
}

func isRelOp(t token) bool {
	return t.kind == tokOp && containsStr([]string{"==", "!=", "<", "<=", ">", ">="}, t.text)
}

func (p *parser) parseRel() fnode {
	l := p.parseAdd()
	for {
		t := p.peek()
		switch {
		case isRelOp(t):
			p.next()
			l = makeCmp(t.text, l, p.parseAdd())
		case t.kind == tokIdent && t.text == "in":
			p.next()
			l = makeIn(l, p.parseAdd())
		default:
			return l
		}
	}
}

func makeCmp(op string, l, r fnode) fnode {
	lt, rt := l.typ(), r.typ()
	if lt == tTime && rt == tInt { // unix seconds
		r, rt = &toTimeNode{x: r}, tTime
	} else if lt == tInt && rt == tTime {
		l, lt = &toTimeNode{x: l}, tTime
	}
	if lt != rt {
		failf("cannot compare %s (%s) with %s (%s)", l.describe(), lt, r.describe(), rt)
	}
	switch {
	case lt == tList:
		failf("operator %s is not defined for list<string> (to match a tag write \"work\" in tags)", op)
	case lt == tBool && op != "==" && op != "!=":
		failf("operator %s is not defined for bool", op)
	}
	checkVisibility(l, r)
	checkVisibility(r, l)
	return &cmpNode{op: op, t: lt, l: l, r: r}
}

// checkVisibility rejects comparisons of visibility with an unknown enum value.
func checkVisibility(field, other fnode) {
	f, ok := field.(*fieldNode)
	if !ok || f.name != "visibility" {
		return
	}
	if lit, ok := other.(*litNode); ok && lit.t == tString && !containsStr(visibilities, lit.v.s) {
		failf("unknown visibility %q (expected PRIVATE, PROTECTED or PUBLIC)", lit.v.s)
	}
}

func makeIn(x, list fnode) fnode {
	if list.typ() != tList {
		failf("the right side of 'in' must be a list such as tags, not %s (%s)", list.describe(), list.typ())
	}
	if x.typ() != tString {
		failf("the left side of 'in' must be a string, not %s (%s)", x.describe(), x.typ())
	}
	return &inNode{x: x, list: list}
}

func (p *parser) parseAdd() fnode {
	l := p.parseUnary()
	for p.isOp("+") || p.isOp("-") {
		op := p.next().text
		r := p.parseUnary()
		l = makeArith(op, l, r)
	}
	return l
}

func makeArith(op string, l, r fnode) fnode {
	lt, rt := l.typ(), r.typ()
	var t ftype
	switch {
	case lt == tTime && rt == tDuration:
		t = tTime
	case op == "+" && lt == tDuration && rt == tTime:
		t = tTime
	case op == "-" && lt == tTime && rt == tTime:
		t = tDuration
	case lt == rt && (lt == tDuration || lt == tInt):
		t = lt
	case op == "+" && lt == tString && rt == tString:
		t = tString
	default:
		failf("operator %s is not defined for %s and %s", op, lt, rt)
	}
	return &arithNode{op: op, t: t, l: l, r: r}
}

func (p *parser) parseUnary() fnode {
	p.enter()
	defer p.leave()
	switch {
	case p.isOp("!"):
		p.next()
		x := p.parseUnary()
		if x.typ() != tBool && isRelOp(p.peek()) {
			failf("'!' applies only to %s; wrap the comparison in parentheses: !(%s %s ...)", x.describe(), x.describe(), p.peek().text)
		}
		p.requireBool(x)
		return &notNode{x: x}
	case p.isOp("-"):
		p.next()
		x := p.parseUnary()
		if t := x.typ(); t != tInt && t != tDuration {
			failf("operator - is not defined for %s", t)
		}
		return &negNode{x: x}
	}
	return p.parseMember()
}

func (p *parser) parseMember() fnode {
	x := p.parsePrimary()
	for p.isOp(".") {
		p.next()
		name := p.next()
		if name.kind != tokIdent {
			failf("expected a method name after '.' but found %s at position %d", name.describe(), name.pos)
		}
		if !p.isOp("(") {
			failf("unknown field %s.%s at position %d (only method calls may follow '.')", x.describe(), name.text, name.pos)
		}
		p.next()
		x = p.parseMethod(x, name)
	}
	return x
}

func (p *parser) parseMethod(recv fnode, name token) fnode {
	switch name.text {
	case "contains", "startsWith", "endsWith":
		if recv.typ() != tString {
			failf("%s() is defined for strings, not %s", name.text, recv.typ())
		}
		arg := p.parseOr()
		if arg.typ() != tString {
			failf("%s() expects a string argument, not %s", name.text, arg.typ())
		}
		p.expectOp(")")
		return &strMethodNode{fn: name.text, recv: recv, arg: arg}
	case "exists", "all":
		if recv.typ() != tList {
			failf("%s() is defined for lists such as tags, not %s", name.text, recv.typ())
		}
		v := p.next()
		if v.kind != tokIdent {
			failf("%s() expects a variable name first, e.g. tags.%s(t, t == \"work\")", name.text, name.text)
		}
		if _, isField := filterFields[v.text]; isField || containsStr([]string{"true", "false", "now", "in"}, v.text) {
			failf("%s cannot be used as a variable name", v.text)
		}
		p.expectOp(",")
		p.scope = append(p.scope, v.text)
		body := p.parseOr()
		p.requireBool(body)
		p.scope = p.scope[:len(p.scope)-1]
		p.expectOp(")")
		return &macroNode{all: name.text == "all", list: recv, body: body}
	case "size":
		p.expectOp(")")
		return makeSize(recv)
	}
	failf("unknown method %s() at position %d", name.text, name.pos)
	return nil
}

func makeSize(x fnode) fnode {
	if t := x.typ(); t != tString && t != tList {
		failf("size() is defined for strings and lists, not %s", t)
	}
	return &sizeNode{x: x}
}

func (p *parser) parsePrimary() fnode {
	t := p.next()
	switch t.kind {
	case tokEOF:
		failf("unexpected end of expression")
	case tokString:
		return &litNode{t: tString, v: fvalue{s: t.str}, src: t.text}
	case tokInt:
		return &litNode{t: tInt, v: fvalue{i: t.num}, src: t.text}
	case tokIdent:
		return p.parseIdent(t)
	case tokOp:
		switch t.text {
		case "(":
			x := p.parseOr()
			p.expectOp(")")
			return x
		case "[":
			return p.parseList()
		}
	}
	failf("unexpected %s at position %d", t.describe(), t.pos)
	return nil
}

func (p *parser) parseList() fnode {
	l := &listNode{}
	if p.isOp("]") {
		p.next()
		return l
	}
	for {
		e := p.parseOr()
		if e.typ() != tString {
			failf("list elements must be strings, not %s", e.typ())
		}
		l.elems = append(l.elems, e)
		if p.isOp(",") {
			p.next()
			continue
		}
		p.expectOp("]")
		return l
	}
}

func (p *parser) parseIdent(t token) fnode {
	name := t.text
	switch name {
	case "true", "false":
		return &litNode{t: tBool, v: fvalue{b: name == "true"}, src: name}
	case "now":
		if p.isOp("(") {
			failf("now is a value, not a function (write now, not now())")
		}
		return &nowNode{}
	case "duration", "timestamp":
		if !p.isOp("(") {
			failf("%s must be called with a string, e.g. %s", name, exampleCall(name))
		}
		p.next()
		a := p.next()
		if a.kind != tokString {
			failf("%s() expects a string literal, e.g. %s", name, exampleCall(name))
		}
		p.expectOp(")")
		src := name + "(" + a.text + ")"
		if name == "duration" {
			d, err := time.ParseDuration(a.str)
			if err != nil {
				failf("invalid duration %q (use a value such as \"168h\" or \"90m\")", a.str)
			}
			return &litNode{t: tDuration, v: fvalue{d: d}, src: src}
		}
		ts, err := time.Parse(time.RFC3339, a.str)
		if err != nil {
			failf("invalid timestamp %q (use RFC 3339, e.g. \"2026-01-02T15:04:05Z\")", a.str)
		}
		return &litNode{t: tTime, v: fvalue{t: ts}, src: src}
	case "size":
		if p.isOp("(") {
			p.next()
			x := p.parseOr()
			p.expectOp(")")
			return makeSize(x)
		}
	case "in":
		failf("unexpected 'in' at position %d", t.pos)
	}
	for i := len(p.scope) - 1; i >= 0; i-- {
		if p.scope[i] == name {
			return &varNode{name: name, idx: i}
		}
	}
	if ft, ok := filterFields[name]; ok {
		return &fieldNode{name: name, t: ft}
	}
	if p.isOp("(") {
		failf("unknown function %s() at position %d", name, t.pos)
	}
	switch {
	case name == "tag":
		failf("unknown field tag at position %d (tags is a list: write \"work\" in tags)", t.pos)
	case name == "create_time" || name == "update_time":
		failf("unknown field %s at position %d (filters use created_ts / updated_ts)", name, t.pos)
	case strings.ToUpper(name) == name:
		failf("unknown field %s at position %d (string values need quotes: \"%s\")", name, t.pos, name)
	}
	failf("unknown field %s at position %d", name, t.pos)
	return nil
}

func exampleCall(name string) string {
	if name == "duration" {
		return `duration("168h")`
	}
	return `timestamp("2026-01-02T15:04:05Z")`
}
