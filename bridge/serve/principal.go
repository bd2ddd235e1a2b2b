package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// A Principal is the identity a request acts for: whom a child may be
// dedicated to under ChildPerPrincipal. The zero Principal is the
// unauthenticated caller (every client of a bridge without tokens).
//
// Today the identity is the bearer token, named by its SHA-256 so that the
// raw token is never kept beyond the check; an OAuth resource server would
// name it by the token's subject instead, through the same type.
type Principal struct{ key string }

// String is safe to log: a short prefix of the hash, never the token.
func (p Principal) String() string {
	if p.key == "" {
		return "anonymous"
	}
	return p.key[:min(len(p.key), len("token:")+8)]
}

// tokenPrincipal names the holder of the token whose SHA-256 is sum.
func tokenPrincipal(sum [32]byte) Principal {
	return Principal{"token:" + hex.EncodeToString(sum[:])}
}

// bearer returns the token of an Authorization header, if it has one.
func bearer(authz string) (string, bool) {
	scheme, tok, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// match compares the presented token with every accepted one in constant
// time (hashing first makes the comparison independent of the presented
// token's length too, and no early exit tells which token came close).
func (g *guard) match(authz string) (Principal, bool) {
	tok, ok := bearer(authz)
	if !ok {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range g.tokenHashes {
		if subtle.ConstantTimeCompare(h[:], g.tokenHashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return tokenPrincipal(g.tokenHashes[found]), true
}

// principal returns whom an already admitted request acts for.
func (g *guard) principal(r *http.Request) Principal {
	if len(g.tokenHashes) == 0 {
		return Principal{}
	}
	p, _ := g.match(r.Header.Get("Authorization"))
	return p
}
