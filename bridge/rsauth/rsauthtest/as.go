// Package rsauthtest is a test authorization server: generated keys, RFC
// 8414 metadata, a JWKS endpoint whose keys can be rotated, RFC 7662
// introspection of opaque tokens it was told about, and a minter of JWT
// access tokens. It is for tests only.
package rsauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Server is a running test authorization server.
type Server struct {
	*httptest.Server
	Issuer string

	// JWKSFetches and Introspections count requests to those endpoints.
	JWKSFetches    atomic.Int64
	Introspections atomic.Int64

	mu      sync.Mutex
	key     crypto.Signer // *ecdsa.PrivateKey (ES256) or *rsa.PrivateKey (RS256)
	alg     jose.SignatureAlgorithm
	kid     string
	opaque  map[string]map[string]any // opaque token -> introspection answer
	basicID string
	basicPw string
}

// New starts a server on 127.0.0.1 whose issuer is its URL (plus path,
// which may be empty); metadata is at the RFC 8414 location for it.
func New(path string) *Server { return start(path, false) }

// NewTLS is New over https, with httptest's certificate (Certificate
// returns it: a test trusts it as a private CA).
func NewTLS(path string) *Server { return start(path, true) }

func start(path string, tls bool) *Server {
	s := &Server{opaque: map[string]map[string]any{}}
	s.Rotate()
	mux := http.NewServeMux()
	s.Server = httptest.NewUnstartedServer(mux)
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	s.Issuer = s.URL + path
	mux.HandleFunc("/.well-known/oauth-authorization-server"+path, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                 s.Issuer,
			"jwks_uri":               s.URL + "/jwks",
			"introspection_endpoint": s.URL + "/introspect",
			"authorization_endpoint": s.URL + "/authorize",
			"token_endpoint":         s.URL + "/token",
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		s.JWKSFetches.Add(1)
		s.mu.Lock()
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: s.key.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}}}
		s.mu.Unlock()
		writeJSON(w, set)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		s.Introspections.Add(1)
		s.mu.Lock()
		id, pw, need := s.basicID, s.basicPw, s.basicID != ""
		s.mu.Unlock()
		// RFC 6749 §2.3.1: both are form-encoded inside HTTP Basic.
		gotID, gotPw, ok := r.BasicAuth()
		gotID, _ = url.QueryUnescape(gotID)
		gotPw, _ = url.QueryUnescape(gotPw)
		if need && (!ok || gotID != id || gotPw != pw) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		ans, ok := s.opaque[r.PostFormValue("token")]
		s.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		writeJSON(w, ans)
	})
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Rotate replaces the signing key (and its kid) with a new P-256 key:
// tokens minted before no longer verify against the published set.
func (s *Server) Rotate() {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.key, s.alg, s.kid = k, jose.ES256, "k-"+randHex(4)
	s.mu.Unlock()
}

// RotateRSA replaces the signing key with a new RSA-2048 key signing
// RS256, what most hosted authorization servers use.
func (s *Server) RotateRSA() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.key, s.alg, s.kid = k, jose.RS256, "r-"+randHex(4)
	s.mu.Unlock()
}

// RequireClientAuth makes introspection demand HTTP Basic id:secret.
func (s *Server) RequireClientAuth(id, secret string) {
	s.mu.Lock()
	s.basicID, s.basicPw = id, secret
	s.mu.Unlock()
}

// Opaque registers an opaque token and the introspection answer for it.
func (s *Server) Opaque(answer map[string]any) string {
	tok := "opaque-" + randHex(16)
	s.mu.Lock()
	s.opaque[tok] = answer
	s.mu.Unlock()
	return tok
}

// Claims describes a token to mint; zero fields get sensible values.
type Claims struct {
	Issuer   string // default: the server's issuer
	Subject  string // default "alice"
	Audience []string
	Scope    string         // the "scope" claim, if set
	Extra    map[string]any // more claims (e.g. "scp")
	Expiry   time.Time      // default: in an hour
	NotBef   time.Time
	KeyID    string // default: the current key's
	NoExpiry bool
}

// Token mints a JWT access token signed with the current key.
func (s *Server) Token(c Claims) string {
	s.mu.Lock()
	key, alg, kid := s.key, s.alg, s.kid
	s.mu.Unlock()
	if c.KeyID != "" {
		kid = c.KeyID
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		panic(err)
	}
	if c.Issuer == "" {
		c.Issuer = s.Issuer
	}
	if c.Subject == "" {
		c.Subject = "alice"
	}
	if c.Expiry.IsZero() {
		c.Expiry = time.Now().Add(time.Hour)
	}
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: c.Audience,
		IssuedAt: jwt.NewNumericDate(time.Now()), ID: randHex(8)}
	if !c.NoExpiry {
		std.Expiry = jwt.NewNumericDate(c.Expiry)
	}
	if !c.NotBef.IsZero() {
		std.NotBefore = jwt.NewNumericDate(c.NotBef)
	}
	extra := map[string]any{}
	for k, v := range c.Extra {
		extra[k] = v
	}
	if c.Scope != "" {
		extra["scope"] = c.Scope
	}
	tok, err := jwt.Signed(signer).Claims(std).Claims(extra).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
