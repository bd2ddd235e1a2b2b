package rsauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// FuzzVerify feeds arbitrary bearer tokens through the whole check (JWS
// parsing, claims, audience, scopes) against an issuer whose key is
// already known, so that no input reaches the network. Nothing may panic,
// and only the seed signed with the key may be accepted with its claims.
func FuzzVerify(f *testing.F) {
	const iss = "https://issuer.example"
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, _ := New(Config{Issuers: []string{iss}})
	is := s.issuers[iss]
	is.keys = []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256"}}
	is.fetched = time.Now().Add(24 * time.Hour) // never stale, never refetched
	is.tried = is.fetched
	rs, _ := s.Resource(resourceURL, []string{"mcp"})

	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	good, _ := jwt.Signed(signer).Claims(map[string]any{"iss": iss, "sub": "s", "aud": resourceURL,
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp"}).Serialize()
	f.Add(good)
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIn0.")
	f.Add("a.b.c")
	f.Add("opaque")
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := rs.Verify(context.Background(), tok)
		if err == nil && (id.Issuer != iss || id.Subject == "") {
			t.Fatalf("accepted %q as %+v", tok, id)
		}
	})
}
