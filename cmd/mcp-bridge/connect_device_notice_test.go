package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// deviceRemote is a 2025-11-25 MCP server behind a device-grant
// authorization server (both fakes): with authInit it wants a token from
// initialize on, else only from the first request after it. The token
// endpoint answers authorization_pending until approve is closed.
type deviceRemote struct {
	base     string
	authInit bool
	approve  chan struct{}
	once     sync.Once
}

func (d *deviceRemote) approveNow() { d.once.Do(func() { close(d.approve) }) }

func newDeviceRemote(t *testing.T, authInit bool) *deviceRemote {
	d := &deviceRemote{authInit: authInit, approve: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		authorized := r.Header.Get("Authorization") == "Bearer at-device"
		if !authorized && (m.Method != "initialize" || d.authInit) && m.ID != nil {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+d.base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		result := `{"tools":[]}`
		if m.Method == "initialize" {
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, d.base+"/mcp", d.base)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"device_authorization_endpoint":%q,"code_challenge_methods_supported":["S256"]}`,
			d.base, d.base+"/authorize", d.base+"/token", d.base+"/register", d.base+"/device")
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"client_id":"dev-client","token_endpoint_auth_method":"none"}`)
	})
	mux.HandleFunc("/device", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"device_code":"DEVICE-CODE-NEVER-SHOWN","user_code":"WDJB-MJHT","verification_uri":%q,"expires_in":600,"interval":0.01}`, d.base+"/activate")
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-d.approve:
			fmt.Fprint(w, `{"access_token":"at-device","token_type":"Bearer","expires_in":3600}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"authorization_pending"}`)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	d.base = srv.URL
	return d
}

// stdioConnect runs `mcp-bridge connect args...` in-process with pipes for
// its stdin and stdout; lines delivers what it writes to stdout.
func stdioConnect(t *testing.T, args ...string) (stdin io.WriteCloser, lines <-chan string, stderr func() string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errBuf strings.Builder
	var errMu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(context.Background(), append([]string{"connect"}, args...), inR, outW, lockedWriter{&errMu, &errBuf})
		outW.Close()
	}()
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("connect did not exit within 30 s of stdin EOF")
		}
		for range ch {
		}
	})
	return inW, ch, func() string { errMu.Lock(); defer errMu.Unlock(); return errBuf.String() }
}

func nextLine(t *testing.T, lines <-chan string, stderr func() string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("stdout closed\nstderr:\n%s", stderr())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no line on stdout within 30 s\nstderr:\n%s", stderr())
	}
	return ""
}

const (
	hostInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	hostInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	hostToolsList   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
)

// Issue 26 (3): a device login that starts once the host's session is
// initialized reaches the host as an MCP log notification too: the
// verification URI and user code (never the device code), level warning.
// The fake authorization server approves only after the host saw it, so
// without the notification the login never ends.
func TestConnectDeviceCodeLogNotification(t *testing.T) {
	useConfigDir(t)
	d := newDeviceRemote(t, false)
	in, lines, stderr := stdioConnect(t, "--protocol", "legacy", "--oauth-grant", "device_code", "--oauth-timeout", "60s", d.base+"/mcp")
	io.WriteString(in, hostInitialize)
	if l := nextLine(t, lines, stderr); !strings.Contains(l, `"id":1`) || !strings.Contains(l, `"result"`) {
		t.Fatalf("initialize answered %s", l)
	}
	io.WriteString(in, hostInitialized+hostToolsList)
	sawNotice := false
	for {
		l := nextLine(t, lines, stderr)
		if strings.Contains(l, "DEVICE-CODE-NEVER-SHOWN") {
			t.Fatalf("the device code reached the host: %s", l)
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Level string            `json:"level"`
				Data  map[string]string `json:"data"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(l), &m)
		if m.Method == "notifications/message" {
			if m.Params.Level != "warning" || m.Params.Data["user_code"] != "WDJB-MJHT" || m.Params.Data["verification_uri"] != d.base+"/activate" ||
				!strings.Contains(m.Params.Data["message"], "enter the code WDJB-MJHT") {
				t.Fatalf("notification %s", l)
			}
			sawNotice = true
			d.approveNow()
			continue
		}
		if !strings.Contains(l, `"id":2`) || !strings.Contains(l, `"tools":[]`) {
			t.Fatalf("tools/list answered %s\nstderr:\n%s", l, stderr())
		}
		break
	}
	if !sawNotice {
		t.Fatal("no notification before the answer")
	}
	if !strings.Contains(stderr(), "enter the code: WDJB-MJHT") {
		t.Errorf("stderr lacks the code:\n%s", stderr())
	}
}

// A device login during the host's initialize (the session not yet
// there): stderr only, nothing on stdout before initialize's answer.
func TestConnectDeviceCodeNoNotificationBeforeInitialized(t *testing.T) {
	useConfigDir(t)
	d := newDeviceRemote(t, true)
	in, lines, stderr := stdioConnect(t, "--protocol", "legacy", "--oauth-grant", "device_code", "--oauth-timeout", "60s", d.base+"/mcp")
	io.WriteString(in, hostInitialize)
	// Approve once the code is on stderr (a person reading the terminal).
	go func() {
		for !strings.Contains(stderr(), "WDJB-MJHT") {
			select {
			case <-time.After(10 * time.Millisecond): // polling a log buffer
			case <-d.approve:
				return
			}
		}
		d.approveNow()
	}()
	if l := nextLine(t, lines, stderr); !strings.Contains(l, `"id":1`) || !strings.Contains(l, `"result"`) {
		t.Fatalf("first line on stdout: %s (want initialize's answer)", l)
	}
	io.WriteString(in, hostInitialized+hostToolsList)
	if l := nextLine(t, lines, stderr); !strings.Contains(l, `"id":2`) {
		t.Fatalf("after initialized: %s (want tools/list's answer, no notification)", l)
	}
}
