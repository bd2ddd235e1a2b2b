package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// fakeAS is an authorization server plus a protected MCP endpoint, with
// knobs for the behaviours under test. It checks PKCE, state round trip,
// redirect URI and resource, and records what clients did.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	// knobs (set before use)
	noDCR        bool
	authMethods  []string // token_endpoint_auth_methods_supported
	issSupported bool
	sendIss      string // iss to put in the authorization response ("" none)
	refresh      bool   // issue refresh tokens
	rotate       bool   // rotate refresh tokens
	expiresIn    int
	scopesSup    []string // AS scopes_supported
	prmScopes    []string
	wwwScope     string // scope in the 401 challenge
	needScope    string // scope the endpoint requires (403 insufficient_scope otherwise)
	cimd         bool
	preClientID  string
	preSecret    string
	regScopeReq  bool   // registration must name a scope; logins stay within it (as Ory Hydra)
	prmResource  string // resource in the protected resource metadata ("" the endpoint)
	denyNext     int    // refuse this many authorization requests (access_denied)
	refuseAll    bool   // the MCP endpoint answers 401 to every token

	// device grant (RFC 8628)
	device          bool     // publish device_authorization_endpoint
	devicePolls     []string // error codes for the next polls, in order; then a token
	deviceAlways    string   // with devicePolls used up: this error for every poll ("" a token)
	deviceInterval  int      // interval in the device authorization response (0: none)
	deviceExpiresIn int      // its expires_in (0: 600)

	mu            sync.Mutex
	challenge     map[string]string // code -> code_challenge
	codeRedirect  map[string]string
	codeScope     map[string]string
	codeResource  map[string]string
	clients       map[string]string // client_id -> secret
	tokens        map[string][]string
	refreshTokens map[string]string // refresh -> scope
	n             int
	registrations int
	regScopes     map[string]string // client_id -> registered scope
	regRequests   []map[string]any
	authorizes    []url.Values
	tokenForms    []url.Values
	tokenAuth     []string
	mcpCalls      int
	deviceAuths   []url.Values
	deviceCodes   map[string]url.Values // device_code -> its device authorization request
	devicePollN   int
}

func newFakeAS(t *testing.T) *fakeAS {
	f := &fakeAS{t: t, challenge: map[string]string{}, codeRedirect: map[string]string{}, codeScope: map[string]string{},
		codeResource: map[string]string{}, clients: map[string]string{}, tokens: map[string][]string{}, refreshTokens: map[string]string{},
		expiresIn: 3600, regScopes: map[string]string{}, deviceCodes: map[string]url.Values{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) url() string { return f.srv.URL }
func (f *fakeAS) mcp() string { return f.srv.URL + "/mcp" }

func (f *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	base := f.srv.URL
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		res := base + "/mcp"
		if f.prmResource != "" {
			res = f.prmResource
		}
		writeJSON(w, map[string]any{"resource": res, "authorization_servers": []string{base + "/as"}, "scopes_supported": f.prmScopes})
	case "/.well-known/oauth-authorization-server/as":
		md := map[string]any{
			"issuer": base + "/as", "authorization_endpoint": base + "/as/authorize", "token_endpoint": base + "/as/token",
			"code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"},
			"authorization_response_iss_parameter_supported": f.issSupported,
			"client_id_metadata_document_supported":          f.cimd,
		}
		if !f.noDCR {
			md["registration_endpoint"] = base + "/as/register"
		}
		if f.authMethods != nil {
			md["token_endpoint_auth_methods_supported"] = f.authMethods
		}
		if f.scopesSup != nil {
			md["scopes_supported"] = f.scopesSup
		}
		if f.device {
			md["device_authorization_endpoint"] = base + "/as/device"
		}
		writeJSON(w, md)
	case "/as/device":
		_ = r.ParseForm()
		form := r.PostForm
		f.deviceAuths = append(f.deviceAuths, form)
		if _, known := f.clients[form.Get("client_id")]; !known && form.Get("client_id") != f.preClientID {
			w.WriteHeader(401)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		f.n++
		dc, uc := fmt.Sprintf("dc-%d-SECRETDEVICE", f.n), fmt.Sprintf("USER-%d", f.n)
		f.deviceCodes[dc] = form
		exp := f.deviceExpiresIn
		if exp == 0 {
			exp = 600
		}
		resp := map[string]any{"device_code": dc, "user_code": uc, "verification_uri": base + "/as/activate",
			"verification_uri_complete": base + "/as/activate?user_code=" + uc, "expires_in": exp}
		if f.deviceInterval > 0 {
			resp["interval"] = f.deviceInterval
		}
		writeJSON(w, resp)
	case "/as/register":
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req["application_type"] != "native" {
			w.WriteHeader(400)
			writeJSON(w, map[string]string{"error": "invalid_client_metadata", "error_description": "application_type"})
			return
		}
		f.regRequests = append(f.regRequests, req)
		scope, _ := req["scope"].(string)
		if f.regScopeReq && scope == "" {
			w.WriteHeader(400)
			writeJSON(w, map[string]string{"error": "invalid_client_metadata", "error_description": "scope is required"})
			return
		}
		f.registrations++
		id := fmt.Sprintf("client-%d", f.registrations)
		f.regScopes[id] = scope
		resp := map[string]any{"client_id": id, "redirect_uris": req["redirect_uris"]}
		m, _ := req["token_endpoint_auth_method"].(string)
		if m != "" && m != "none" {
			resp["client_secret"] = "secret-" + id
			f.clients[id] = "secret-" + id
		} else {
			f.clients[id] = ""
		}
		resp["token_endpoint_auth_method"] = m
		w.WriteHeader(201)
		writeJSON(w, resp)
	case "/as/authorize":
		q := r.URL.Query()
		f.authorizes = append(f.authorizes, q)
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "pkce", 400)
			return
		}
		id := q.Get("client_id")
		if _, known := f.clients[id]; !known && id != f.preClientID && !(f.cimd && strings.HasPrefix(id, "https://")) {
			// RFC 6749 §4.1.2.1: an invalid client id is shown to the
			// person, never redirected.
			http.Error(w, "invalid_client: unknown client", 400)
			return
		}
		to, _ := url.Parse(q.Get("redirect_uri"))
		rq := to.Query()
		rq.Set("state", q.Get("state"))
		refuse := ""
		if f.denyNext > 0 {
			f.denyNext--
			refuse = "access_denied"
		} else if reg, ok := f.regScopes[id]; ok && f.regScopeReq && !coversScopes(strings.Fields(reg), strings.Fields(q.Get("scope"))) {
			refuse = "invalid_scope"
		}
		if refuse != "" {
			rq.Set("error", refuse)
			to.RawQuery = rq.Encode()
			http.Redirect(w, r, to.String(), http.StatusFound)
			return
		}
		f.n++
		code := fmt.Sprintf("code-%d", f.n)
		f.challenge[code] = q.Get("code_challenge")
		f.codeRedirect[code] = q.Get("redirect_uri")
		f.codeScope[code] = q.Get("scope")
		f.codeResource[code] = q.Get("resource")
		rq.Set("code", code)
		if f.sendIss != "" {
			rq.Set("iss", f.sendIss)
		}
		to.RawQuery = rq.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/as/token":
		_ = r.ParseForm()
		form := r.PostForm
		f.tokenForms = append(f.tokenForms, form)
		id, secret, basic := r.BasicAuth()
		if basic {
			id, _ = url.QueryUnescape(id)
			secret, _ = url.QueryUnescape(secret)
			f.tokenAuth = append(f.tokenAuth, AuthClientSecretBasic)
		} else if form.Get("client_secret") != "" {
			id, secret = form.Get("client_id"), form.Get("client_secret")
			f.tokenAuth = append(f.tokenAuth, AuthClientSecretPost)
		} else if form.Get("client_assertion") != "" {
			id = form.Get("client_id")
			f.tokenAuth = append(f.tokenAuth, AuthPrivateKeyJWT)
		} else {
			id = form.Get("client_id")
			f.tokenAuth = append(f.tokenAuth, AuthNone)
		}
		want, known := f.clients[id]
		if id == f.preClientID && f.preClientID != "" {
			want, known = f.preSecret, true
		}
		if strings.HasPrefix(id, "https://") && f.cimd {
			want, known = "", true
		}
		if !known || (want != "" && secret != want && form.Get("client_assertion") == "") {
			w.WriteHeader(401)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		var scope string
		switch form.Get("grant_type") {
		case "authorization_code":
			code := form.Get("code")
			ch, ok := f.challenge[code]
			delete(f.challenge, code)
			if !ok || oauth2.S256ChallengeFromVerifier(form.Get("code_verifier")) != ch || form.Get("redirect_uri") != f.codeRedirect[code] || form.Get("resource") != f.codeResource[code] {
				w.WriteHeader(400)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			scope = f.codeScope[code]
		case "refresh_token":
			s, ok := f.refreshTokens[form.Get("refresh_token")]
			if !ok {
				w.WriteHeader(400)
				writeJSON(w, map[string]string{"error": "invalid_grant", "error_description": "revoked"})
				return
			}
			if f.rotate {
				delete(f.refreshTokens, form.Get("refresh_token"))
			}
			scope = s
		case "client_credentials":
			scope = form.Get("scope")
		case deviceGrantType:
			auth, ok := f.deviceCodes[form.Get("device_code")]
			if !ok || auth.Get("client_id") != id || form.Get("resource") != auth.Get("resource") {
				w.WriteHeader(400)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			f.devicePollN++
			refuse := f.deviceAlways
			if len(f.devicePolls) > 0 {
				refuse, f.devicePolls = f.devicePolls[0], f.devicePolls[1:]
			}
			if refuse != "" {
				w.WriteHeader(400)
				writeJSON(w, map[string]string{"error": refuse})
				return
			}
			delete(f.deviceCodes, form.Get("device_code"))
			scope = auth.Get("scope")
		default:
			w.WriteHeader(400)
			writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		f.n++
		at := fmt.Sprintf("at-%d-SECRETTOKEN", f.n)
		f.tokens[at] = strings.Fields(scope)
		resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": f.expiresIn, "scope": scope}
		if f.refresh && (form.Get("grant_type") != "refresh_token" || f.rotate) {
			rt := fmt.Sprintf("rt-%d-SECRETREFRESH", f.n)
			f.refreshTokens[rt] = scope
			resp["refresh_token"] = rt
		}
		writeJSON(w, resp)
	case "/mcp":
		h := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(h, "Bearer ")
		scopes, valid := f.tokens[tok]
		prm := base + "/.well-known/oauth-protected-resource/mcp"
		if !ok || !valid || f.refuseAll {
			c := fmt.Sprintf(`Bearer resource_metadata="%s"`, prm)
			if ok {
				c += `, error="invalid_token", error_description="the token is no longer valid"`
			}
			if f.wwwScope != "" {
				c += fmt.Sprintf(`, scope="%s"`, f.wwwScope)
			}
			w.Header().Set("WWW-Authenticate", c)
			w.WriteHeader(401)
			return
		}
		if f.needScope != "" && !hasScope(scopes, f.needScope) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, f.needScope, prm))
			w.WriteHeader(403)
			return
		}
		f.mcpCalls++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	default:
		http.NotFound(w, r)
	}
}

// revoke forgets every token, as a server-side logout would.
func (f *fakeAS) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string][]string{}
	f.refreshTokens = map[string]string{}
}

// expireAccess forgets the access tokens only.
func (f *fakeAS) expireAccess() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string][]string{}
}

func (f *fakeAS) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
