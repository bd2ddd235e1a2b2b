package connect

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestErrorsCarryNoConfiguredSecret: with a URL password and query
// secret and secret header values, the JSON-RPC errors the host gets —
// the remote refusing the connection, or answering 500 and 401 with a
// body and challenge echoing what it got — contain none of them
// (data.url redacted, echoes scrubbed). The body excerpt stays for the
// host that configured the remote; HideRemoteDetail drops it.
func TestErrorsCarryNoConfiguredSecret(t *testing.T) {
	const pass, query, key, tok = "url-pass-4411", "query-sec-2290", "key-val-9932", "tok-val-7765"
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			readBody(r)
			e := "got " + r.URL.String() + " " + r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key")
			w.Header().Set("WWW-Authenticate", `Bearer error_description="`+e+`"`)
			http.Error(w, e, status)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	s500 := httptest.NewServer(echo(http.StatusInternalServerError))
	defer s500.Close()
	s401 := httptest.NewServer(echo(http.StatusUnauthorized))
	defer s401.Close()
	for _, hide := range []bool{false, true} {
		for name, base := range map[string]string{"refused": refused, "500": s500.URL, "401": s401.URL} {
			u := strings.Replace(base, "://", "://svc:"+pass+"@", 1) + "/mcp?key=" + query
			hdr := http.Header{"Authorization": {"Bearer " + tok}, "X-Api-Key": {key}}
			h := startHost(t, Config{URL: u, Header: hdr, Protocol: ProtocolModern, MaxRetries: -1, HideRemoteDetail: hide})
			h.send(modernCall("1", "x"))
			resp, _ := h.response("1", 10*time.Second)
			h.close()
			b, _ := json.Marshal(resp)
			if resp["error"] == nil {
				t.Errorf("%s: no error: %s", name, b)
			}
			for _, s := range []string{pass, query, key, tok} {
				if strings.Contains(string(b), s) {
					t.Errorf("%s (hide %v): %q in %s", name, hide, s, b)
				}
			}
			if hide && strings.Contains(string(b), "got ") {
				t.Errorf("%s: the remote's body with HideRemoteDetail: %s", name, b)
			}
			if !hide && name == "500" && !strings.Contains(string(b), "got /mcp?") {
				t.Errorf("%s: the body excerpt is gone: %s", name, b)
			}
		}
	}
}
