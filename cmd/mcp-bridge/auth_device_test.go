package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// auth login --oauth-grant device_code: the verification URI and user code
// on stderr (never the device code), the registration names the device
// grant, the polls use it, and the login is stored. The server's interval
// is a fraction of a second here (RFC 8628 has whole seconds; connect
// takes what it is given), so nothing waits 5 s.
func TestAuthLoginDeviceCode(t *testing.T) {
	useConfigDir(t)
	var mu sync.Mutex
	var grantTypes []any
	polls := 0
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(401)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, base+"/mcp", base)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"device_authorization_endpoint":%q,"code_challenge_methods_supported":["S256"]}`,
			base, base+"/authorize", base+"/token", base+"/register", base+"/device")
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		grantTypes, _ = m["grant_types"].([]any)
		mu.Unlock()
		w.WriteHeader(201)
		fmt.Fprint(w, `{"client_id":"dev-client","token_endpoint_auth_method":"none"}`)
	})
	mux.HandleFunc("/device", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"device_code":"DEVICE-CODE-NEVER-SHOWN","user_code":"WDJB-MJHT","verification_uri":%q,"expires_in":600,"interval":0.01}`, base+"/activate")
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" || r.PostForm.Get("device_code") != "DEVICE-CODE-NEVER-SHOWN" {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		if polls++; polls < 3 {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"authorization_pending"}`)
			return
		}
		fmt.Fprint(w, `{"access_token":"at-device","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-device"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL

	code, out, errs := runCLI("auth", "login", "--oauth-grant", "device_code", base+"/mcp")
	if code != exitOK || !strings.Contains(out, "Logged in") {
		t.Fatalf("auth login: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{base + "/activate", "enter the code: WDJB-MJHT"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "DEVICE-CODE-NEVER-SHOWN") {
		t.Errorf("the device code is on stderr:\n%s", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if polls != 3 || len(grantTypes) == 0 || grantTypes[0] != "urn:ietf:params:oauth:grant-type:device_code" {
		t.Errorf("polls %d, registered grant_types %v", polls, grantTypes)
	}
	if code, out, _ := runCLI("auth", "status", base+"/mcp"); code != exitOK || !strings.Contains(out, "dev-client") {
		t.Errorf("auth status: %d %s", code, out)
	}
}
