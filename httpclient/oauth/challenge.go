package oauth

import (
	"net/http"
	"strings"
)

// A Challenge is one challenge of a WWW-Authenticate header (RFC 9110
// §11.6.1): an auth-scheme, lower-cased, with its auth-params (names
// lower-cased, values unquoted) or a token68.
type Challenge struct {
	Scheme  string
	Params  map[string]string
	Token68 string
}

// maxChallengeHeader bounds how much of WWW-Authenticate is parsed; a
// hostile server cannot make the parser do unbounded work.
const maxChallengeHeader = 16 << 10

// ParseChallenges parses every WWW-Authenticate value of h into its
// challenges. Malformed parts are skipped: a client reading a challenge
// should use what it can understand rather than fail the whole login.
func ParseChallenges(h http.Header) []Challenge {
	var out []Challenge
	budget := maxChallengeHeader
	for _, v := range h.Values("Www-Authenticate") {
		if len(v) > budget {
			v = v[:budget]
		}
		budget -= len(v)
		out = append(out, parseChallengeList(v)...)
		if budget <= 0 {
			break
		}
	}
	return out
}

// Bearer returns the first Bearer challenge of h.
func Bearer(h http.Header) (Challenge, bool) {
	for _, c := range ParseChallenges(h) {
		if c.Scheme == "bearer" {
			return c, true
		}
	}
	return Challenge{}, false
}

// parseChallengeList parses
//
//	challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//	auth-param = token BWS "=" BWS ( token / quoted-string )
//
// separated by commas. A token after a comma starts a new challenge unless
// an "=" follows it, which makes it the next auth-param.
func parseChallengeList(s string) []Challenge {
	var out []Challenge
	p := &scanner{s: s}
	var cur *Challenge
	for {
		p.skip(" \t,")
		if p.done() {
			break
		}
		tok := p.token()
		if tok == "" {
			p.i++ // not a token character: skip it
			continue
		}
		p.skip(" \t")
		if p.peek() == '=' && cur != nil && !p.token68Tail() {
			p.i++
			p.skip(" \t")
			val, ok := p.value()
			if !ok {
				continue
			}
			name := strings.ToLower(tok)
			if _, dup := cur.Params[name]; !dup { // RFC 9110: each name only once; keep the first
				cur.Params[name] = val
			}
			continue
		}
		// A new challenge.
		out = append(out, Challenge{Scheme: strings.ToLower(tok), Params: map[string]string{}})
		cur = &out[len(out)-1]
		p.skip(" \t")
		// token68: a token followed by '='s and then a comma or the end.
		start := p.i
		t := p.token68()
		if t != "" {
			p.skip(" \t")
			if p.done() || p.peek() == ',' {
				cur.Token68 = t
				continue
			}
			p.i = start
		}
	}
	return out
}

type scanner struct {
	s string
	i int
}

func (p *scanner) done() bool { return p.i >= len(p.s) }

func (p *scanner) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *scanner) skip(set string) {
	for !p.done() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// isTchar reports an RFC 9110 tchar.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *scanner) token() string {
	start := p.i
	for !p.done() && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// token68Tail reports whether the '=' at the cursor is the padding of a
// token68 (more '='s, then a comma or the end) rather than an auth-param.
func (p *scanner) token68Tail() bool {
	j := p.i
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	return j == len(p.s) || p.s[j] == ','
}

func (p *scanner) token68() string {
	start := p.i
	for !p.done() {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return ""
	}
	for !p.done() && p.s[p.i] == '=' {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads a token or a quoted-string (with quoted-pair escapes).
func (p *scanner) value() (string, bool) {
	if p.peek() != '"' {
		t := p.token()
		return t, t != ""
	}
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		switch c {
		case '\\':
			p.i++
			if p.done() {
				return "", false
			}
			b.WriteByte(p.s[p.i])
		case '"':
			p.i++
			return b.String(), true
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	return "", false // unterminated
}
