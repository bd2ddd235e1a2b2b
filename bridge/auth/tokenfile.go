package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// A NamedToken is an accepted bearer token and the name its holder goes by
// in logs and metrics (empty: a prefix of the token's hash).
type NamedToken struct {
	Name  string
	Token string
}

// ErrTokenFile is wrapped by every error ParseTokenFile and ReadTokenFile
// return. No error quotes a token: a line is named by its number.
var ErrTokenFile = errors.New("auth: token file")

const (
	maxTokenFile   = 1 << 20 // bytes
	maxTokenName   = 64
	maxTokensInAll = 10000
)

// ParseTokenFile reads an --auth-token-file: one token per line, as
// "NAME:TOKEN" or a bare "TOKEN"; blank lines and lines starting with '#'
// are skipped; space around names and tokens is trimmed.
//
// The separator is the first ':'. A bearer token cannot hold one (RFC 6750
// §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"="), so "NAME:TOKEN" is never mistaken for a token; a token with any
// other character, a name outside [A-Za-z0-9._@-] or longer than 64, a
// token listed twice and a name given to two tokens are errors.
func ParseTokenFile(data []byte) ([]NamedToken, error) {
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTokenFile, maxTokenFile)
	}
	var out []NamedToken
	seenTok, seenName := map[string]bool{}, map[string]bool{}
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		name, tok, named := strings.Cut(s, ":")
		if !named {
			name, tok = "", s
		}
		name, tok = strings.TrimSpace(name), strings.TrimSpace(tok)
		switch {
		case named && !validTokenName(name):
			return nil, fmt.Errorf("%w: line %d: a name is 1-%d of A-Z a-z 0-9 . _ @ -", ErrTokenFile, n, maxTokenName)
		case !validToken(tok):
			return nil, fmt.Errorf("%w: line %d: not a bearer token (RFC 6750: letters, digits, - . _ ~ + / and trailing =)", ErrTokenFile, n)
		case seenTok[tok]:
			return nil, fmt.Errorf("%w: line %d: the same token is listed before", ErrTokenFile, n)
		case named && seenName[name]:
			return nil, fmt.Errorf("%w: line %d: name %q is given to another token before", ErrTokenFile, n, name)
		case len(out) == maxTokensInAll:
			return nil, fmt.Errorf("%w: more than %d tokens", ErrTokenFile, maxTokensInAll)
		}
		seenTok[tok], seenName[name] = true, true
		out = append(out, NamedToken{Name: name, Token: tok})
	}
	return out, nil
}

// ReadTokenFile reads and parses path. warning is set when the file can
// be read by other users (its mode has group or other bits): it is the
// operator's to fix, but the bridge says so.
func ReadTokenFile(path string) (tokens []NamedToken, warning string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && groupOrWorldReadable(fi.Mode()) {
		warning = fmt.Sprintf("%s is readable by other users (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	tokens, err = ParseTokenFile(data)
	if err == nil && len(tokens) == 0 {
		err = fmt.Errorf("%w: %s holds no token", ErrTokenFile, path)
	}
	return tokens, warning, err
}

func validTokenName(s string) bool {
	if s == "" || len(s) > maxTokenName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("._@-", rune(c)) {
			return false
		}
	}
	return true
}

// validToken: RFC 6750 §2.1 b64token.
func validToken(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !isAlnum(c) && !strings.ContainsRune("-._~+/", rune(c)) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
