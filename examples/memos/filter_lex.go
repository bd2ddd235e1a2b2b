package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tokenizer for the CEL subset accepted by memo_list_memos' filter argument.

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokInt
	tokOp
)

type token struct {
	kind tokKind
	text string // identifier name, operator, or raw literal
	str  string // decoded string literal
	num  int64
	pos  int // 1-based character position
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokIdent:
		return "identifier " + t.text
	case tokString:
		return "string " + strconv.Quote(t.str)
	case tokInt:
		return "number " + t.text
	}
	return "'" + t.text + "'"
}

// filterError is a user-facing parse error (without the trailing period).
type filterError struct{ msg string }

func (e *filterError) Error() string { return e.msg }

func failf(format string, a ...any) { panic(&filterError{msg: fmt.Sprintf(format, a...)}) }

var twoCharOps = []string{"==", "!=", "<=", ">=", "&&", "||"}

func lex(src string) []token {
	var toks []token
	i := 0
	col := func(byteOff int) int { return utf8.RuneCountInString(src[:byteOff]) + 1 }
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: src[i:j], pos: col(i)})
			i = j
		case isDigit(c):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			n, err := strconv.ParseInt(src[i:j], 10, 64)
			if err != nil {
				failf("number %s at position %d is too large", src[i:j], col(i))
			}
			toks = append(toks, token{kind: tokInt, text: src[i:j], num: n, pos: col(i)})
			i = j
		case c == '"' || c == '\'':
			s, n := lexString(src, i, col)
			toks = append(toks, token{kind: tokString, text: src[i : i+n], str: s, pos: col(i)})
			i += n
		default:
			if i+1 < len(src) {
				if two := src[i : i+2]; containsStr(twoCharOps, two) {
					toks = append(toks, token{kind: tokOp, text: two, pos: col(i)})
					i += 2
					continue
				}
			}
			switch c {
			case '<', '>', '!', '(', ')', ',', '.', '[', ']', '+', '-':
				toks = append(toks, token{kind: tokOp, text: string(c), pos: col(i)})
				i++
			case '=':
				failf("unexpected '=' at position %d (use == to compare)", col(i))
			case '&':
				failf("unexpected '&' at position %d (use && to combine conditions)", col(i))
			case '|':
				failf("unexpected '|' at position %d (use || to combine conditions)", col(i))
			default:
				r, _ := utf8.DecodeRuneInString(src[i:])
				failf("unexpected character %q at position %d", r, col(i))
			}
		}
	}
	return append(toks, token{kind: tokEOF, pos: col(len(src))})
}

// lexString decodes a quoted literal starting at src[start]; it returns the
// decoded value and the number of source bytes consumed.
func lexString(src string, start int, col func(int) int) (string, int) {
	quote := src[start]
	var b strings.Builder
	i := start + 1
	for i < len(src) {
		c := src[i]
		switch {
		case c == quote:
			return b.String(), i + 1 - start
		case c == '\\':
			if i+1 >= len(src) {
				break
			}
			switch e := src[i+1]; e {
			case '\\', '"', '\'':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				failf("invalid escape sequence \\%c in string at position %d", e, col(start))
			}
			i += 2
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	failf("unterminated string starting at position %d", col(start))
	return "", 0
}

func isIdentStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
