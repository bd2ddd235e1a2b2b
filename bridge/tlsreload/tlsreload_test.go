package tlsreload

import (
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// writePair writes the pair the way a rotation tool does: each file
// written aside, then renamed over the old one.
func writePair(t *testing.T, dir string, certPEM, keyPEM []byte) (certFile, keyFile string) {
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

// serveTLS serves h over TLS with cf's configuration (testmain.ServeTLS).
func serveTLS(t *testing.T, h http.Handler, cf *CertFiles) string {
	t.Helper()
	return testmain.ServeTLS(t, h, cf.TLSConfig())
}

// servedSerial is the serial number of the certificate a new connection
// to addr is shown.
func servedSerial(t *testing.T, addr string, ca *testmain.CA) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// A rotated pair is served to the next connection; a broken one is
// refused (logged once) and the previous pair goes on being served.
func TestTLSCertRotation(t *testing.T) {
	ca := testmain.NewCA(t)
	dir := t.TempDir()
	c1, k1 := ca.Issue(t, 1)
	logs := &testmain.SyncBuffer{}
	certFile, keyFile := writePair(t, dir, c1, k1)
	cf, err := LoadCertFiles(certFile, keyFile, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	cf.interval = 0 // look at the files on every handshake
	addr := serveTLS(t, http.NotFoundHandler(), cf)
	if got := servedSerial(t, addr, ca); got != "1" {
		t.Fatalf("serial %s, want 1", got)
	}

	c2, k2 := ca.Issue(t, 2)
	writePair(t, dir, c2, k2)
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("after rotation: serial %s, want 2", got)
	}

	// A certificate with another pair's key, then a cut-off certificate.
	c3, _ := ca.Issue(t, 3)
	writePair(t, dir, c3, k2)
	for range 3 {
		if got := servedSerial(t, addr, ca); got != "2" {
			t.Fatalf("after a mismatched pair: serial %s, want 2 still", got)
		}
	}
	if n := strings.Count(logs.String(), "do not load"); n != 1 {
		t.Errorf("the mismatched pair logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "private key does not match public key") {
		t.Errorf("the log does not say why:\n%s", logs)
	}
	writePair(t, dir, c2[:len(c2)/2], k2)
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("after a truncated certificate: serial %s, want 2 still", got)
	}
	// A missing file (mid-rename) is also survived.
	os.Remove(filepath.Join(dir, "key.pem"))
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("with the key missing: serial %s, want 2 still", got)
	}

	c4, k4 := ca.Issue(t, 4)
	writePair(t, dir, c4, k4)
	if got := servedSerial(t, addr, ca); got != "4" {
		t.Fatalf("after a good pair again: serial %s, want 4", got)
	}
}

// Between looks at the files the pair held is served; Reload (SIGHUP)
// loads at once.
func TestTLSReloadForced(t *testing.T) {
	ca := testmain.NewCA(t)
	dir := t.TempDir()
	c1, k1 := ca.Issue(t, 1)
	certFile, keyFile := writePair(t, dir, c1, k1)
	cf, err := LoadCertFiles(certFile, keyFile, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cf.interval = time.Hour
	addr := serveTLS(t, http.NotFoundHandler(), cf)
	c2, k2 := ca.Issue(t, 2)
	writePair(t, dir, c2, k2)
	if got := servedSerial(t, addr, ca); got != "1" {
		t.Fatalf("before the next look: serial %s, want 1", got)
	}
	if err := cf.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("after Reload: serial %s, want 2", got)
	}
	_, kx := ca.Issue(t, 9)
	writePair(t, dir, c2, kx)
	if err := cf.Reload(); err == nil {
		t.Error("Reload of a mismatched pair succeeded")
	}
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("after a failed Reload: serial %s, want 2", got)
	}
}

func TestLoadCertFilesErrors(t *testing.T) {
	ca := testmain.NewCA(t)
	dir := t.TempDir()
	c1, k1 := ca.Issue(t, 1)
	_, k2 := ca.Issue(t, 2)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key, otherKey := write("c.pem", c1), write("k.pem", k1), write("k2.pem", k2)
	garbage := write("g.pem", []byte("not PEM"))
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name, cert, key, want string
		notExist              bool
	}{
		{"missing cert", missing, key, "tlsreload: TLS certificate", true},
		{"missing key", cert, missing, "tlsreload: TLS key", true},
		{"mismatched", cert, otherKey, "private key does not match public key", false},
		{"key as cert", key, cert, "tlsreload: TLS certificate", false},
		{"garbage cert", garbage, key, "failed to find any PEM data", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCertFiles(tc.cert, tc.key, zerolog.Nop())
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, os.ErrNotExist) != tc.notExist {
				t.Errorf("err = %v, want %q (not exist: %v)", err, tc.want, tc.notExist)
			}
		})
	}
	if _, err := LoadCertFiles(cert, key, zerolog.Nop()); err != nil {
		t.Errorf("the good pair: %v", err)
	}
}

// A Kubernetes secret volume rotates by swapping a directory symlink
// (cert.pem -> ..data/cert.pem, ..data -> ..2026_…): the files' own names
// never change, their targets do.
func TestTLSCertSymlinkSwap(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need a privilege on Windows")
	}
	ca := testmain.NewCA(t)
	dir := t.TempDir()
	for i, d := range []string{"v1", "v2"} {
		c, k := ca.Issue(t, int64(i+1))
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		writePair(t, filepath.Join(dir, d), c, k)
	}
	link := func(target, name string) {
		t.Helper()
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("v1", "..data")
	link("..data/cert.pem", "cert.pem")
	link("..data/key.pem", "key.pem")
	cf, err := LoadCertFiles(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cf.interval = 0
	addr := serveTLS(t, http.NotFoundHandler(), cf)
	if got := servedSerial(t, addr, ca); got != "1" {
		t.Fatalf("serial %s, want 1", got)
	}
	link("v2", "..data")
	if got := servedSerial(t, addr, ca); got != "2" {
		t.Fatalf("after the ..data swap: serial %s, want 2", got)
	}
}
