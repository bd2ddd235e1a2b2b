package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
)

// The client_credentials grant with private_key_jwt: the assertion verifies
// with the public key (ES256 and RS256), iss = sub = client id, aud = issuer.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		alg string
		key crypto.Signer
	}{{"ES256", ec}, {"RS256", rk}} {
		t.Run(tc.alg, func(t *testing.T) {
			der, _ := x509.MarshalPKCS8PrivateKey(tc.key)
			signer, alg, err := ParseClientKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), tc.alg)
			if err != nil || alg != tc.alg {
				t.Fatalf("ParseClientKey: %v %s", err, alg)
			}
			f := newFakeAS(t)
			f.preClientID = "machine"
			f.authMethods = []string{AuthPrivateKeyJWT}
			_, hc, blog := setup(t, f, func(c *Config) {
				c.Grant, c.ClientID, c.ClientKey = GrantClientCredentials, "machine", signer
			})
			mustPost(t, hc, f.mcp())
			if n := browserRuns(t, blog); n != 0 {
				t.Errorf("browser runs = %d", n)
			}
			var form map[string][]string
			f.locked(func() { form = f.tokenForms[0] })
			if form["grant_type"][0] != "client_credentials" || form["client_assertion_type"][0] != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
				t.Fatalf("form %v", form)
			}
			parts := strings.Split(form["client_assertion"][0], ".")
			if len(parts) != 3 {
				t.Fatalf("assertion %q", form["client_assertion"][0])
			}
			digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
			sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
			switch k := tc.key.(type) {
			case *ecdsa.PrivateKey:
				if len(sig) != 64 || !ecdsa.Verify(&k.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
					t.Fatal("ES256 signature does not verify")
				}
			case *rsa.PrivateKey:
				if err := rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
					t.Fatal(err)
				}
			}
			var claims map[string]any
			b, _ := base64.RawURLEncoding.DecodeString(parts[1])
			_ = json.Unmarshal(b, &claims)
			if claims["iss"] != "machine" || claims["sub"] != "machine" || claims["aud"] != f.url()+"/as" || claims["jti"] == "" {
				t.Errorf("claims %v", claims)
			}
		})
	}
	if _, _, err := ParseClientKey([]byte("not pem"), ""); err == nil {
		t.Error("garbage key accepted")
	}
}
