package main

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

type ftype int

const (
	tBool ftype = iota + 1
	tString
	tInt
	tTime
	tDuration
	tList
)

func (t ftype) String() string {
	switch t {
	case tBool:
		return "bool"
	case tString:
		return "string"
	case tInt:
		return "int"
	case tTime:
		return "timestamp"
	case tDuration:
		return "duration"
	case tList:
		return "list<string>"
	}
	return "unknown"
}

type fvalue struct {
	b bool
	s string
	i int64
	t time.Time
	d time.Duration
	l []string
}

type evalEnv struct {
	m    *memo
	now  time.Time
	vars []string // macro variables, indexed like parser.scope
}

// fnode is a type-checked expression node.
type fnode interface {
	typ() ftype
	eval(e *evalEnv) fvalue
	describe() string
}

type litNode struct {
	t   ftype
	v   fvalue
	src string
}

func (n *litNode) typ() ftype             { return n.t }
func (n *litNode) eval(*evalEnv) fvalue   { return n.v }
func (n *litNode) describe() string       { return n.src }
func (n *fieldNode) typ() ftype           { return n.t }
func (n *fieldNode) describe() string     { return n.name }
func (n *varNode) typ() ftype             { return tString }
func (n *varNode) eval(e *evalEnv) fvalue { return fvalue{s: e.vars[n.idx]} }
func (n *varNode) describe() string       { return n.name }
func (n *nowNode) typ() ftype             { return tTime }
func (n *nowNode) eval(e *evalEnv) fvalue { return fvalue{t: e.now} }
func (n *nowNode) describe() string       { return "now" }

type fieldNode struct {
	name string
	t    ftype
}

func (n *fieldNode) eval(e *evalEnv) fvalue {
	m := e.m
	switch n.name {
	case "content":
		return fvalue{s: m.Content}
	case "creator":
		return fvalue{s: m.Creator}
	case "visibility":
		return fvalue{s: m.Visibility}
	case "created_ts":
		return fvalue{t: m.Created}
	case "updated_ts":
		return fvalue{t: m.Updated}
	case "pinned":
		return fvalue{b: m.Pinned}
	case "has_task_list":
		return fvalue{b: m.hasTaskList()}
	case "has_link":
		return fvalue{b: m.hasLink()}
	case "has_code":
		return fvalue{b: m.hasCode()}
	case "has_incomplete_tasks":
		return fvalue{b: m.hasIncompleteTasks()}
	case "tags":
		return fvalue{l: m.Tags}
	}
	return fvalue{}
}

type varNode struct {
	name string
	idx  int
}

type nowNode struct{}

type notNode struct{ x fnode }

func (n *notNode) typ() ftype             { return tBool }
func (n *notNode) eval(e *evalEnv) fvalue { return fvalue{b: !n.x.eval(e).b} }
func (n *notNode) describe() string       { return "!" + n.x.describe() }

type logicNode struct {
	and  bool
	l, r fnode
}

func (n *logicNode) typ() ftype       { return tBool }
func (n *logicNode) describe() string { return "condition" }
func (n *logicNode) eval(e *evalEnv) fvalue {
	l := n.l.eval(e).b
	if n.and != l { // false && x, true || x
		return fvalue{b: l}
	}
	return fvalue{b: n.r.eval(e).b}
}

type cmpNode struct {
	op   string
	t    ftype
	l, r fnode
}

func (n *cmpNode) typ() ftype       { return tBool }
func (n *cmpNode) describe() string { return n.l.describe() + " " + n.op + " " + n.r.describe() }
func (n *cmpNode) eval(e *evalEnv) fvalue {
	a, b := n.l.eval(e), n.r.eval(e)
	var c int
	switch n.t {
	case tString:
		c = strings.Compare(a.s, b.s)
	case tInt:
		c = cmp.Compare(a.i, b.i)
	case tTime:
		c = a.t.Compare(b.t)
	case tDuration:
		c = cmp.Compare(a.d, b.d)
	case tBool:
		c = cmpBool(a.b, b.b)
	}
	var r bool
	switch n.op {
	case "==":
		r = c == 0
	case "!=":
		r = c != 0
	case "<":
		r = c < 0
	case "<=":
		r = c <= 0
	case ">":
		r = c > 0
	case ">=":
		r = c >= 0
	}
	return fvalue{b: r}
}

type inNode struct{ x, list fnode }

func (n *inNode) typ() ftype       { return tBool }
func (n *inNode) describe() string { return n.x.describe() + " in " + n.list.describe() }
func (n *inNode) eval(e *evalEnv) fvalue {
	return fvalue{b: slices.Contains(n.list.eval(e).l, n.x.eval(e).s)}
}

type arithNode struct {
	op   string
	t    ftype
	l, r fnode
}

func (n *arithNode) typ() ftype       { return n.t }
func (n *arithNode) describe() string { return n.l.describe() + " " + n.op + " " + n.r.describe() }
func (n *arithNode) eval(e *evalEnv) fvalue {
	a, b := n.l.eval(e), n.r.eval(e)
	lt, rt := n.l.typ(), n.r.typ()
	sign := time.Duration(1)
	if n.op == "-" {
		sign = -1
	}
	switch {
	case lt == tTime && rt == tDuration:
		return fvalue{t: a.t.Add(sign * b.d)}
	case lt == tDuration && rt == tTime:
		return fvalue{t: b.t.Add(a.d)}
	case lt == tTime && rt == tTime:
		return fvalue{d: a.t.Sub(b.t)}
	case lt == tDuration:
		return fvalue{d: a.d + sign*b.d}
	case lt == tInt:
		return fvalue{i: a.i + int64(sign)*b.i}
	}
	return fvalue{s: a.s + b.s}
}

type negNode struct{ x fnode }

func (n *negNode) typ() ftype       { return n.x.typ() }
func (n *negNode) describe() string { return "-" + n.x.describe() }
func (n *negNode) eval(e *evalEnv) fvalue {
	v := n.x.eval(e)
	return fvalue{i: -v.i, d: -v.d}
}

type toTimeNode struct{ x fnode }

func (n *toTimeNode) typ() ftype             { return tTime }
func (n *toTimeNode) describe() string       { return n.x.describe() }
func (n *toTimeNode) eval(e *evalEnv) fvalue { return fvalue{t: time.Unix(n.x.eval(e).i, 0)} }

type strMethodNode struct {
	fn        string
	recv, arg fnode
}

func (n *strMethodNode) typ() ftype       { return tBool }
func (n *strMethodNode) describe() string { return n.recv.describe() + "." + n.fn + "(...)" }
func (n *strMethodNode) eval(e *evalEnv) fvalue {
	s, a := n.recv.eval(e).s, n.arg.eval(e).s
	switch n.fn {
	case "startsWith":
		return fvalue{b: strings.HasPrefix(s, a)}
	case "endsWith":
		return fvalue{b: strings.HasSuffix(s, a)}
	}
	return fvalue{b: strings.Contains(s, a)}
}

type macroNode struct {
	all        bool
	list, body fnode
}

func (n *macroNode) typ() ftype       { return tBool }
func (n *macroNode) describe() string { return n.list.describe() + ".exists(...)" }
func (n *macroNode) eval(e *evalEnv) fvalue {
	list := n.list.eval(e).l
	e.vars = append(e.vars, "")
	idx := len(e.vars) - 1
	defer func() { e.vars = e.vars[:idx] }()
	for _, item := range list {
		e.vars[idx] = item
		if n.body.eval(e).b != n.all { // exists: first true; all: first false
			return fvalue{b: !n.all}
		}
	}
	return fvalue{b: n.all}
}

type sizeNode struct{ x fnode }

func (n *sizeNode) typ() ftype       { return tInt }
func (n *sizeNode) describe() string { return "size(" + n.x.describe() + ")" }
func (n *sizeNode) eval(e *evalEnv) fvalue {
	v := n.x.eval(e)
	if n.x.typ() == tList {
		return fvalue{i: int64(len(v.l))}
	}
	return fvalue{i: int64(utf8.RuneCountInString(v.s))}
}

type listNode struct{ elems []fnode }

func (n *listNode) typ() ftype       { return tList }
func (n *listNode) describe() string { return "list" }
func (n *listNode) eval(e *evalEnv) fvalue {
	out := make([]string, len(n.elems))
	for i, el := range n.elems {
		out[i] = el.eval(e).s
	}
	return fvalue{l: out}
}
