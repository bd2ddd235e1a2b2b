package auth

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
	defer s.Close()
	is := s.issuers[iss]
	is.keys = []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256"}}
	is.okStart = time.Now()
	is.expires = is.okStart.Add(24 * time.Hour) // never stale, never refetched
	is.absent = map[string]time.Time{}
	is.lastEnd = is.okStart
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

// FuzzMaxAge: any Cache-Control value parses without panicking, and a
// lifetime read from it is within RFC 9111's delta-seconds range.
func FuzzMaxAge(f *testing.F) {
	for _, seed := range []string{"max-age=60", "public, MAX-AGE=\"300\"", "max-age=99999999999999999999", "no-store", "max-age=", "max-age=-1, max-age=5", ",,=,"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		age, ok := parseMaxAge([]string{v})
		if ok && (age < 0 || age > maxDeltaSeconds*time.Second) {
			t.Fatalf("%q: max-age %v", v, age)
		}
		if !ok && age != 0 {
			t.Fatalf("%q: not ok but %v", v, age)
		}
	})
}
