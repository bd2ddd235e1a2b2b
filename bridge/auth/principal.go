package auth

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
)

// A Principal is the identity a request acts for: whom a child may be
// dedicated to under serve's ChildPerPrincipal, what logs and metrics
// name. The zero Principal is the unauthenticated caller (every client of
// a bridge without tokens).
//
// A static token's principal is keyed by the token's SHA-256, so that the
// raw token is never kept beyond the check; an OAuth token's by its issuer
// and subject. The name is what logs show.
type Principal struct{ key, name string }

// String is safe to log: the token's name from --auth-token-file, an
// OAuth subject, or a short prefix of the token's hash — never a token.
func (p Principal) String() string {
	switch {
	case p.name != "":
		return p.name
	case p.key == "":
		return "anonymous"
	}
	return p.key[:min(len(p.key), len("token:")+8)]
}

// Key tells principals apart: "token:<SHA-256 of the token>" or
// "oauth:<subject>" ("" for the unauthenticated caller). It holds no
// secret, but a hash is no name for a log: String is.
func (p Principal) Key() string { return p.key }

// tokenPrincipal names the holder of the token whose SHA-256 is sum.
func tokenPrincipal(sum [32]byte, name string) Principal {
	return Principal{"token:" + hex.EncodeToString(sum[:]), name}
}

// OAuthPrincipal names the subject an Authenticator vouched for (Admit,
// or serve for a caller another front verified). The name is cut to a
// printable 128 bytes: it comes from a token.
func OAuthPrincipal(subject string) Principal {
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, subject)
	if len(name) > 128 {
		name = name[:128]
	}
	return Principal{"oauth:" + subject, name}
}

type principalKey struct{}
type slotKey struct{}

// WithPrincipal records whom an admitted request acts for (Guard.Admit
// does; an in-process caller that authenticated the request itself may).
func WithPrincipal(r *http.Request, p Principal) *http.Request {
	if p == (Principal{}) {
		return r
	}
	if slot, ok := r.Context().Value(slotKey{}).(*string); ok {
		*slot = p.String()
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// PrincipalSlot prepares r for serve's Handler so that a wrapper around it
// (an access log, metrics) can learn whom the request was admitted as:
// name, called after ServeHTTP returns, gives the principal's name (see
// Principal.String; "" when unauthenticated or refused).
func PrincipalSlot(r *http.Request) (_ *http.Request, name func() string) {
	slot := new(string)
	return r.WithContext(context.WithValue(r.Context(), slotKey{}, slot)), func() string { return *slot }
}

// PrincipalOf returns whom an admitted request acts for (the zero
// Principal when unauthenticated).
func PrincipalOf(r *http.Request) Principal {
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}
