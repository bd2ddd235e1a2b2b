package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ParseClientKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA)
// for private_key_jwt, and checks it against alg ("ES256" or "RS256"; ""
// picks by key type).
func ParseClientKey(pemBytes []byte, alg string) (crypto.Signer, string, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, "", errors.New("oauth: client key: no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("oauth: client key: %w", err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", errors.New("oauth: client key: only P-256 EC keys (ES256) are supported")
		}
		if alg != "" && alg != "ES256" {
			return nil, "", fmt.Errorf("oauth: client key is an EC P-256 key, not usable with %s", alg)
		}
		return k, "ES256", nil
	case *rsa.PrivateKey:
		if alg != "" && alg != "RS256" {
			return nil, "", fmt.Errorf("oauth: client key is an RSA key, not usable with %s", alg)
		}
		return k, "RS256", nil
	}
	return nil, "", fmt.Errorf("oauth: client key: unsupported key type %T", key)
}

// signAssertion makes the RFC 7523 §3 client assertion: iss and sub are
// the client id, aud the authorization server's issuer, a fresh jti, and a
// five-minute lifetime. go-jose signs it (x/oauth2 has no client
// assertions); the algorithm follows the key, as ParseClientKey checked.
func signAssertion(key crypto.Signer, clientID, audience string, now time.Time) (string, error) {
	alg := jose.RS256
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("oauth: signing the client assertion: %w", err)
	}
	s, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer: clientID, Subject: clientID, Audience: jwt.Audience{audience}, ID: rand.Text(),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	}).Serialize()
	if err != nil {
		return "", fmt.Errorf("oauth: signing the client assertion: %w", err)
	}
	return s, nil
}
