// Package authtest is a test authorization server: generated keys, RFC
// 8414 metadata, a JWKS endpoint whose keys can be rotated, RFC 7662
// introspection of opaque tokens it was told about, and a minter of JWT
// access tokens. It is for tests only.
package authtest

import (
	"context"
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
	"strconv"
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
	jwksAnswers    atomic.Int64

	mu      sync.Mutex
	key     crypto.Signer // *ecdsa.PrivateKey (ES256) or *rsa.PrivateKey (RS256)
	alg     jose.SignatureAlgorithm
	kid     string
	opaque  map[string]map[string]any // opaque token -> introspection answer
	basicID string
	basicPw string

	decoys       []jose.JSONWebKey // published before the signing key
	cacheControl string            // the key set's Cache-Control, if any
	hang         chan struct{}     // non-nil: JWKS requests wait for it to close
	fetched      chan struct{}     // closed (and replaced) after each JWKS answer
	introDelay   time.Duration     // each introspection answer waits this long
	introHang    chan struct{}     // non-nil: introspection waits for it to close
	asked        map[string]int    // introspections per token
	introArrived chan struct{}     // closed (and replaced) when an introspection request arrives
}

// New starts a server on 127.0.0.1 whose issuer is its URL (plus path,
// which may be empty); metadata is at the RFC 8414 location for it.
func New(path string) *Server { return start(path, false) }

// NewTLS is New over https, with httptest's certificate (Certificate
// returns it: a test trusts it as a private CA).
func NewTLS(path string) *Server { return start(path, true) }

func start(path string, tls bool) *Server {
	s := &Server{opaque: map[string]map[string]any{}, fetched: make(chan struct{}), asked: map[string]int{}, introArrived: make(chan struct{})}
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
		hang := s.hang
		s.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
				return
			}
		}
		s.mu.Lock()
		set := jose.JSONWebKeySet{Keys: append(append([]jose.JSONWebKey(nil), s.decoys...),
			jose.JSONWebKey{Key: s.key.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"})}
		if s.cacheControl != "" {
			w.Header().Set("Cache-Control", s.cacheControl)
		}
		s.mu.Unlock()
		writeJSON(w, set)
		s.jwksAnswers.Add(1)
		s.mu.Lock()
		close(s.fetched)
		s.fetched = make(chan struct{})
		s.mu.Unlock()
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
		tok := r.PostFormValue("token")
		s.mu.Lock()
		ans, ok := s.opaque[tok]
		s.asked[tok]++
		delay, hang := s.introDelay, s.introHang
		close(s.introArrived)
		s.introArrived = make(chan struct{})
		s.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
				return
			}
		}
		if delay > 0 {
			t := time.NewTimer(delay) // an authorization server's own latency
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
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

// HangJWKS makes the key set endpoint hang (each request waits until
// HangJWKS(false) or its client gives up) or answer again.
func (s *Server) HangJWKS(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.hang == nil:
		s.hang = make(chan struct{})
	case !on && s.hang != nil:
		close(s.hang)
		s.hang = nil
	}
}

// HangIntrospection is HangJWKS for the introspection endpoint.
func (s *Server) HangIntrospection(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.introHang == nil:
		s.introHang = make(chan struct{})
	case !on && s.introHang != nil:
		close(s.introHang)
		s.introHang = nil
	}
}

// IntrospectionDelay makes every introspection answer take d.
func (s *Server) IntrospectionDelay(d time.Duration) {
	s.mu.Lock()
	s.introDelay = d
	s.mu.Unlock()
}

// Introspected reports how often tok was introspected.
func (s *Server) Introspected(tok string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[tok]
}

// JWKSCacheControl sets the Cache-Control of the key set's responses
// ("": none).
func (s *Server) JWKSCacheControl(v string) {
	s.mu.Lock()
	s.cacheControl = v
	s.mu.Unlock()
}

// Decoys publishes n more P-256 keys (kids "decoy-0" ...) before the
// signing key in the key set.
func (s *Server) Decoys(n int) {
	var keys []jose.JSONWebKey
	for i := range n {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		keys = append(keys, jose.JSONWebKey{Key: k.Public(), KeyID: "decoy-" + strconv.Itoa(i), Algorithm: string(jose.ES256), Use: "sig"})
	}
	s.mu.Lock()
	s.decoys = keys
	s.mu.Unlock()
}

// AwaitJWKSAnswers waits until the key set endpoint has answered n
// requests in all (failed and hung ones not counted), or ctx ends.
func (s *Server) AwaitJWKSAnswers(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		ch := s.fetched
		s.mu.Unlock()
		if s.jwksAnswers.Load() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AwaitIntrospections waits until n introspection requests have arrived
// in all (answered or not), or ctx ends.
func (s *Server) AwaitIntrospections(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		ch := s.introArrived
		s.mu.Unlock()
		if s.Introspections.Load() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
	NoKeyID  bool   // a header without kid
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
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if !c.NoKeyID {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
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
