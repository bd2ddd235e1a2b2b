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
	"errors"
	"fmt"
	"time"
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
// five-minute lifetime.
func signAssertion(key crypto.Signer, clientID, audience string, now time.Time) (string, error) {
	alg := "RS256"
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = "ES256"
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	})
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return "", fmt.Errorf("oauth: signing the client assertion: %w", err)
		}
		// RFC 7518 §3.4: R and S as 32-byte big-endian integers, concatenated.
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		var err error
		sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			return "", fmt.Errorf("oauth: signing the client assertion: %w", err)
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
