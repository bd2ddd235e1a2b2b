package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOriginsCheck: with checkHost, a Host that is not a loopback name is
// refused (DNS rebinding), and so is an Origin neither allowed nor
// loopback (the transports' MUST); allowed origins match whatever their
// case and default port, loopback ones always.
func TestOriginsCheck(t *testing.T) {
	o := NewOrigins([]string{"https://App.Example.com", "not a url"}, true)
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8080", "", 0},
		{"localhost:8080", "", 0},
		{"[::1]:8080", "", 0},
		{"mcp.localhost.", "", 0},
		{"evil.example.com:8080", "", http.StatusForbidden},
		{"127.0.0.1:8080", "https://app.example.com:443", 0},
		{"127.0.0.1:8080", "http://localhost:3000", 0},
		{"127.0.0.1:8080", "http://127.0.0.1", 0},
		{"127.0.0.1:8080", "https://evil.example.com", http.StatusForbidden},
		{"127.0.0.1:8080", "null", http.StatusForbidden},
		{"127.0.0.1:8080", "file://app.example.com", http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got, msg := o.Check(r); got != tc.want {
			t.Errorf("Host %q Origin %q: %d %q, want %d", tc.host, tc.origin, got, msg, tc.want)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Host = "evil\x01" + strings.Repeat("x", 200)
	if _, msg := o.Check(r); strings.Contains(msg, "\x01") || len(msg) > 160 {
		t.Errorf("a hostile Host is echoed as is: %q", msg)
	}
	r.Host = "evil.example.com"
	if got, _ := NewOrigins(nil, false).Check(r); got != 0 {
		t.Errorf("without checkHost a foreign Host is refused: %d", got)
	}
}

// TestOriginsCORS: a preflight from an allowed origin is answered (204)
// with the MCP headers and the requested Mcp-Param-* ones allowed; a
// request of a foreign origin gets no CORS headers at all.
func TestOriginsCORS(t *testing.T) {
	o := NewOrigins([]string{"https://app.example.com"}, false)
	r := httptest.NewRequest(http.MethodOptions, "/mcp", nil)
	r.Header.Set("Origin", "https://app.example.com")
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", "content-type, mcp-param-region, X-Other")
	w := httptest.NewRecorder()
	if !o.CORS(w, r) || w.Code != http.StatusNoContent {
		t.Fatalf("preflight: done=false or status %d", w.Code)
	}
	allowed := w.Header().Get("Access-Control-Allow-Headers")
	if !strings.Contains(allowed, "Mcp-Session-Id") || !strings.Contains(allowed, "mcp-param-region") || strings.Contains(allowed, "X-Other") {
		t.Errorf("Access-Control-Allow-Headers: %q", allowed)
	}
	r = httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Origin", "https://app.example.com")
	w = httptest.NewRecorder()
	if o.CORS(w, r) || w.Header().Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("POST from an allowed origin: %v", w.Header())
	}
	r.Header.Set("Origin", "https://evil.example.com")
	w = httptest.NewRecorder()
	if o.CORS(w, r) || len(w.Header()) != 0 {
		t.Errorf("foreign origin got CORS headers: %v", w.Header())
	}
}

// TestLoopbackNames: the browser-facing names add .localhost and a
// trailing dot to outbound.LoopbackHost.
func TestLoopbackNames(t *testing.T) {
	for host, want := range map[string]bool{"app.localhost": true, "localhost.": true, "LOCALHOST": true, "localhost.example.com": false} {
		if got := isLoopbackName(host); got != want {
			t.Errorf("isLoopbackName(%q) = %v, want %v", host, got, want)
		}
	}
}
