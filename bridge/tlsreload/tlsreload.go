// Package tlsreload is TLS for a listener in front of serve's Handler (or
// of many, in a gateway): a certificate/key pair read from PEM files and
// read again when the files change, so that a renewed certificate
// (certbot, cert-manager, a mounted Kubernetes secret) is served without a
// restart and without dropping a session.
//
// It is a package of its own, not part of serve: it knows nothing of MCP
// and the Handler knows nothing of TLS (the listener does), and a program
// embedding the Handler can use it without cmd.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

const (
	// certCheckInterval bounds how often a handshake looks at the files: a
	// stat of two files at most once a second, whatever the handshake rate.
	certCheckInterval = time.Second
	// maxPEMFile bounds what is read from either file; a certificate chain
	// is a few KiB.
	maxPEMFile = 1 << 20
)

// CertFiles is a certificate/key pair loaded from PEM files. Its
// GetCertificate looks at the files at most once a second and loads them
// again when either changed (path, inode, size or modification time); a pair
// that fails to load — a half-written rotation, a key that does not match —
// is logged once and the previous pair stays served.
type CertFiles struct {
	certFile, keyFile string
	log               zerolog.Logger
	interval          time.Duration

	mu         sync.Mutex
	cert       *tls.Certificate
	loaded     fileStamps // the files the served pair came from
	refused    fileStamps // the files last refused, not loaded again until they change
	checked    time.Time
	refreshing bool
	statErr    string // the last failure to stat, logged once
}

// fileStamps identifies the contents of the certificate and key files
// without reading them.
type fileStamps [2]os.FileInfo

func (a fileStamps) same(b fileStamps) bool {
	for i := range a {
		if a[i] == nil || b[i] == nil || !os.SameFile(a[i], b[i]) ||
			a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}

// LoadCertFiles loads the pair; an error names the file at fault, or both
// when the key does not belong to the certificate.
func LoadCertFiles(certFile, keyFile string, log zerolog.Logger) (*CertFiles, error) {
	c := &CertFiles{certFile: certFile, keyFile: keyFile, log: log, interval: certCheckInterval}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, err := c.load()
	if err != nil {
		return nil, err
	}
	c.cert, c.loaded, c.checked = cert, st, time.Now()
	c.logLoaded(cert, "TLS certificate loaded")
	return c, nil
}

// TLSConfig is the server configuration for the pair: TLS 1.2 or later,
// HTTP/2 offered by ALPN before HTTP/1.1. RFC 9113 §9.2: "Implementations
// of HTTP/2 MUST use TLS version 1.2 [TLS12] or higher for HTTP/2 over
// TLS." An http.Server serving a tls.NewListener with this configuration
// speaks HTTP/2 to the clients that ask for it.
func (c *CertFiles) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: c.GetCertificate,
	}
}

// GetCertificate returns the pair to present, first loading the files
// again if they changed and the last look is a second old. Only the
// handshake that looks waits for the files; the others get the pair held.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	due := !c.refreshing && time.Since(c.checked) >= c.interval
	if due {
		c.refreshing = true
	}
	cert := c.cert
	c.mu.Unlock()
	if !due {
		return cert, nil
	}
	c.refresh(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	c.checked = time.Now()
	return c.cert, nil
}

// Reload loads the files now, changed or not (for SIGHUP). On an error
// the previous pair stays served.
func (c *CertFiles) Reload() error {
	return c.refresh(true)
}

// Certificate returns the pair being served.
func (c *CertFiles) Certificate() *tls.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert
}

func (c *CertFiles) refresh(force bool) error {
	st, err := c.stat()
	c.mu.Lock()
	if err != nil {
		// A rotation that renames files may leave a moment with one
		// missing: say so once, keep serving.
		if msg := err.Error(); msg != c.statErr || force {
			c.statErr = msg
			c.log.Error().Err(err).Msg("TLS certificate files unreadable; still serving the previous certificate")
		}
		c.mu.Unlock()
		return err
	}
	c.statErr = ""
	unchanged := !force && (st.same(c.loaded) || st.same(c.refused))
	c.mu.Unlock()
	if unchanged {
		return nil
	}
	// Read without the lock: other handshakes go on with the pair held.
	cert, err := c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.refused = st
		c.log.Error().Err(err).Msg("TLS certificate files changed but do not load; still serving the previous certificate")
		return err
	}
	c.cert, c.loaded, c.refused = cert, st, fileStamps{}
	c.logLoaded(cert, "TLS certificate reloaded")
	return nil
}

func (c *CertFiles) stat() (fileStamps, error) {
	var st fileStamps
	for i, name := range [2]string{c.certFile, c.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return st, fmt.Errorf("tlsreload: TLS %s: %w", [2]string{"certificate", "key"}[i], err)
		}
		st[i] = fi
	}
	return st, nil
}

func (c *CertFiles) load() (*tls.Certificate, error) {
	certPEM, err := readPEMFile(c.certFile)
	if err != nil {
		return nil, fmt.Errorf("tlsreload: TLS certificate: %w", err)
	}
	keyPEM, err := readPEMFile(c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsreload: TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsreload: TLS certificate %s with key %s: %w", c.certFile, c.keyFile, err)
	}
	return &cert, nil
}

func readPEMFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxPEMFile)
	}
	return b, nil
}

func (c *CertFiles) logLoaded(cert *tls.Certificate, msg string) {
	leaf := cert.Leaf // set by tls.X509KeyPair
	if leaf == nil {
		c.log.Info().Str("cert_file", c.certFile).Msg(msg)
		return
	}
	ev := c.log.Info()
	if time.Now().After(leaf.NotAfter) {
		ev = c.log.Warn()
		msg += " (expired)"
	}
	ev.Str("cert_file", c.certFile).Str("subject", leaf.Subject.String()).Strs("dns_names", leaf.DNSNames).
		Str("serial", leaf.SerialNumber.Text(16)).Time("not_after", leaf.NotAfter).Msg(msg)
}
