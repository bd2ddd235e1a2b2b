package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
)

// testCA issues loopback server certificates (the bridge packages have
// their own in bridge/internal/testmain, which cmd cannot import).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca := &testCA{pool: x509.NewCertPool()}
	ca.cert, ca.key, ca.pem = ca.sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcp-bridge cmd test CA"},
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	})
	ca.pool.AddCert(ca.cert)
	return ca
}

// sign creates tmpl with a new key, signed by ca (self-signed while ca
// has no certificate yet).
func (ca *testCA) sign(t *testing.T, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	parent, signer := tmpl, key
	if ca.cert != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// issue returns a PEM certificate for 127.0.0.1 with this serial, and its
// PEM key.
func (ca *testCA) issue(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	_, key, certPEM := ca.sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// writeTLSPair writes cert.pem and key.pem in dir, each written aside and
// renamed over the old file, as rotation tools do.
func writeTLSPair(t *testing.T, dir string, certPEM, keyPEM []byte) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for name, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(name+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".new", name); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// lockedBuffer is a process's stderr that a test may read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// protoCounter counts the responses a client got by HTTP major version.
type protoCounter struct {
	base   http.RoundTripper
	h1, h2 atomic.Int64
}

func (p *protoCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(r)
	if err == nil {
		if resp.ProtoMajor == 2 {
			p.h2.Add(1)
		} else {
			p.h1.Add(1)
		}
	}
	return resp, err
}

func servedSerial(t *testing.T, addr string, pool *x509.CertPool) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// The real binary serves HTTPS: the Go SDK client trusting the test CA
// calls a tool over HTTP/2; a rotated pair is served to new connections
// within the one-second look at the files; a broken pair is refused and
// the previous one stays served, to new and open connections alike.
func TestServeTLSBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca := newTestCA(t)
	dir := t.TempDir()
	c1, k1 := ca.issue(t, 1)
	certFile, keyFile := writeTLSPair(t, dir, c1, k1)
	addr := freePort(t)
	stderr := &lockedBuffer{}
	p := exec.Command(bin["mcp-bridge"], "serve", "--listen", addr, "--tls-cert", certFile, "--tls-key", keyFile, "--", bin["memos"])
	p.Stderr = stderr
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Process.Kill()
		p.Wait()
		if t.Failed() {
			t.Logf("bridge stderr:\n%s", stderr)
		}
	})

	pc := &protoCounter{base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}, ForceAttemptHTTP2: true}}
	hc := &http.Client{Transport: pc}
	defer hc.CloseIdleConnections()
	waitFor(t, "HTTPS /readyz", func() bool {
		resp, err := hc.Get("https://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if !strings.Contains(stderr.String(), `"url":"https://`+addr+`/mcp"`) {
		t.Errorf("the startup log does not give the https URL:\n%s", stderr)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "https://" + addr + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(when string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{"pageSize": 1}})
		if err != nil || res.IsError {
			t.Fatalf("%s: memo_list_memos = %+v, %v", when, res, err)
		}
	}
	call("first call")
	if pc.h2.Load() == 0 || pc.h1.Load() != 0 {
		t.Errorf("responses over HTTP/2: %d, HTTP/1.1: %d; want all HTTP/2", pc.h2.Load(), pc.h1.Load())
	}

	c2, k2 := ca.issue(t, 2)
	writeTLSPair(t, dir, c2, k2)
	start := time.Now()
	waitFor(t, "the rotated certificate", func() bool { return servedSerial(t, addr, ca.pool) == "2" })
	t.Logf("rotated certificate served after %d ms", time.Since(start).Milliseconds())
	call("after rotation, on the connection opened before")

	c3, _ := ca.issue(t, 3)
	writeTLSPair(t, dir, c3, k2)
	waitFor(t, "the mismatched pair refused", func() bool {
		servedSerial(t, addr, ca.pool) // a handshake makes the bridge look
		return strings.Contains(stderr.String(), "private key does not match public key")
	})
	if got := servedSerial(t, addr, ca.pool); got != "2" {
		t.Errorf("with a mismatched pair on disk: serial %s, want 2 still", got)
	}
	call("with a mismatched pair on disk")

	// Hostile clients: plain HTTP on the TLS port is answered 400; a
	// connection that never sends a ClientHello is closed by the handshake
	// timeout (the 10 s header timeout), not held.
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("plain HTTP to the TLS port: %d, want 400", resp.StatusCode)
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start = time.Now()
	silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection without a ClientHello: read %v, want it closed by the bridge", err)
	}
	t.Logf("a connection without a ClientHello closed after %d ms", time.Since(start).Milliseconds())
}

// The pair is checked at start: both flags or neither, files that exist,
// a key that belongs to the certificate. TLS does not lift the need for a
// token off loopback.
func TestServeTLSFlags(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c1, k1 := ca.issue(t, 1)
	_, k2 := ca.issue(t, 2)
	certFile, keyFile := writeTLSPair(t, dir, c1, k1)
	otherKey := filepath.Join(dir, "other.pem")
	if err := os.WriteFile(otherKey, k2, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		args       []string
		code       int
		want, file string // the message, and the file it names
	}{
		{[]string{"--tls-cert", certFile}, exitUsage, "--tls-cert and --tls-key go together", ""},
		{[]string{"--tls-key", keyFile}, exitUsage, "--tls-cert and --tls-key go together", ""},
		{[]string{"--tls-cert", missing, "--tls-key", keyFile}, exitFailure, "tlsreload: TLS certificate: ", missing},
		{[]string{"--tls-cert", certFile, "--tls-key", missing}, exitFailure, "tlsreload: TLS key: ", missing},
		{[]string{"--tls-cert", certFile, "--tls-key", otherKey}, exitFailure, "private key does not match public key", otherKey},
		{[]string{"--tls-cert", certFile, "--tls-key", keyFile, "--listen", "0.0.0.0:0"}, exitUsage, "reachable from other machines", ""},
	}
	for _, tc := range tests {
		args := append(append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), "--", bin["memos"])
		code, _, stderr := runCLI(args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, tc.file) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// tlsMemos serves memos over https with a certificate of a fresh test CA,
// in-process with serve's own listener code, so that the server side sees
// the protocol of each request. It returns the endpoint's URL, the CA's
// PEM file, the key file (a file holding no certificate) and the counts
// of HTTP/1.1 and HTTP/2 requests served.
func tlsMemos(t *testing.T) (url, caFile, keyFile string, h1, h2 *atomic.Int64) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c1, k1 := ca.issue(t, 1)
	certFile, keyFile := writeTLSPair(t, dir, c1, k1)
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	h1, h2 = new(atomic.Int64), new(atomic.Int64)
	h, err := serve.New(serve.Config{Command: func() *exec.Cmd { return exec.Command(bin["memos"]) }, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	t.Cleanup(func() { h.Close() })
	tf := &tlsFlags{cert: certFile, key: keyFile}
	ln, certs, err := tf.listen("127.0.0.1:0", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		} else {
			h1.Add(1)
		}
		h.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second, ErrorLog: stdlog.New(io.Discard, "", 0)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		h.BeginShutdown()
		srv.Close()
		<-served
	})
	return baseURL(ln, certs) + "/mcp", caFile, keyFile, h1, h2
}

// connect --ca-file trusts a private CA, and speaks HTTP/2 to an https
// server that offers it (observed at the server). Without the flag the
// certificate is refused.
func TestConnectCAFile(t *testing.T) {
	url, caFile, keyFile, h1, h2 := tlsMemos(t)

	lines := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--ca-file", caFile, "--retries", "0", url)
	cmd.Stdin = strings.NewReader(lines)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"id":2,"result":{`) || !strings.Contains(string(out), "memos/") {
		t.Fatalf("connect --ca-file: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	if h2.Load() == 0 || h1.Load() != 0 {
		t.Errorf("requests from connect over HTTP/2: %d, HTTP/1.1: %d; want all HTTP/2", h2.Load(), h1.Load())
	}

	cmd = exec.Command(bin["mcp-bridge"], "connect", "--retries", "0", url)
	cmd.Stdin = strings.NewReader(lines)
	stderr.Reset()
	cmd.Stderr = &stderr
	out, _ = cmd.Output()
	if strings.Contains(string(out), `"result"`) || !strings.Contains(stderr.String()+string(out), "certificate") {
		t.Errorf("connect without --ca-file: stdout %s\nstderr %s\nwant a certificate error", out, stderr.String())
	}

	code, _, errOut := runCLI("connect", "--ca-file", caFile+".missing", url)
	if code != exitFailure || !strings.Contains(errOut, "--ca-file") {
		t.Errorf("connect --ca-file missing: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("connect", "--ca-file", keyFile, url)
	if code != exitUsage || !strings.Contains(errOut, "no PEM certificate") {
		t.Errorf("connect --ca-file of a key: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("auth", "login", "--ca-file", keyFile, url)
	if code != exitUsage || !strings.Contains(errOut, "no PEM certificate") {
		t.Errorf("auth login --ca-file of a key: exit %d, %q", code, errOut)
	}
}

// auth login --ca-file: discovery, metadata and token requests to an
// authorization server under a private CA trust it too.
func TestAuthLoginCAFile(t *testing.T) {
	useConfigDir(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	c1, k1 := ca.issue(t, 1)
	certFile, keyFile := writeTLSPair(t, dir, c1, k1)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _, err := (&tlsFlags{cert: certFile, key: keyFile}).listen("127.0.0.1:0", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + ln.Addr().String()
	var mu sync.Mutex
	var hits []string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(401)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, base+"/mcp", base)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"response_types_supported":["code"],"grant_types_supported":["client_credentials"],"code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post"]}`,
			base, base+"/authorize", base+"/token")
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":3600}`)
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.Method+" "+r.URL.Path)
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second, ErrorLog: stdlog.New(io.Discard, "", 0)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		<-served
	}()

	code, out, errs := runCLI("auth", "login", "--ca-file", caFile, "--oauth-grant", "client_credentials",
		"--oauth-client-id", "c1", "--oauth-client-secret", "s1", base+"/mcp")
	mu.Lock()
	defer mu.Unlock()
	if code != exitOK || !strings.Contains(out, "Logged in") {
		t.Fatalf("auth login --ca-file: exit %d\n%s\n%s\nrequests: %q", code, out, errs, hits)
	}
	if !slices.Contains(hits, "POST /token") {
		t.Errorf("no token request reached the server: %q", hits)
	}
}

// serve --config --ca-file: a remote entry whose https server has a
// certificate of a private CA is reached (over HTTP/2) with the flag and
// refused without it; single-command serve without --oauth-issuer has no
// use for the flag and says so.
func TestServeConfigCAFile(t *testing.T) {
	url, caFile, _, h1, h2 := tlsMemos(t)
	cfgFile := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`{"mcpServers": {"remote": {"url": %q}}}`, url)), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile, "--ca-file", caFile)
	waitReady(t, addr)
	route := "http://" + addr + "/servers/remote/mcp"
	sid := initSession(t, route)
	if code, body := sessionCall(t, route, sid); code != 200 || !strings.Contains(body, "users/1") {
		t.Fatalf("a call to the remote entry with --ca-file: %d %s", code, body)
	}
	if h2.Load() == 0 || h1.Load() != 0 {
		t.Errorf("requests to the remote over HTTP/2: %d, HTTP/1.1: %d; want all HTTP/2", h2.Load(), h1.Load())
	}

	addr = freePort(t)
	p := startBridgeProc(t, "serve", "--listen", addr, "--config", cfgFile)
	waitReady(t, addr)
	resp := post(t, "http://"+addr+"/servers/remote/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), `"result"`) {
		t.Errorf("without --ca-file the remote answered: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "a certificate error in the log", func() bool { return strings.Contains(p.stderrString(), "certificate") })

	code, _, errOut := runCLI("serve", "--ca-file", caFile, "--", "memos")
	if code != exitUsage || !strings.Contains(errOut, "--ca-file is for") {
		t.Errorf("serve --ca-file without --config or --oauth-issuer: exit %d, %q", code, errOut)
	}
}
