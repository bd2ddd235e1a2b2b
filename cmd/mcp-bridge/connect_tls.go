package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// caFlag is --ca-file of connect, auth login and serve: a private CA (a
// team's serve --tls-cert signed by an internal CA, an in-house
// authorization server) trusted besides the system's roots.
// SSL_CERT_FILE does this on Linux only; macOS and Windows verify against
// the platform store.
type caFlag struct{ file string }

// caForConnect is what connect and auth login reach over https.
const caForConnect = "the server and its OAuth authorization server"

// register adds --ca-file; what names what the bridge reaches with it.
func (c *caFlag) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&c.file, "ca-file", "", "also trust the PEM CA certificates in this `file` for https ("+what+"), besides the system's")
}

// transport is nil without the flag (each client keeps its own default);
// with it, httpclient's transport trusting the file's CAs too.
func (c *caFlag) transport() (*http.Transport, error) {
	if c.file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // the system's roots cannot be read: the file's alone
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, usagef("--ca-file %s: no PEM certificate in it", c.file)
	}
	t := httpclient.NewTransport()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// client is an http.Client over t with timeout (0: none), or nil when t is.
// Its redirects need no setting here: every package that takes a client
// (httpclient, oauth, bridge/auth) applies httpclient/outbound's policy to it.
func client(t *http.Transport, timeout time.Duration) *http.Client {
	if t == nil {
		return nil
	}
	return &http.Client{Transport: t, Timeout: timeout}
}

// oauthClient is the client for discovery, registration and token
// requests over t (nil: oauth's own default). The timeout is oauth's.
func oauthClient(t *http.Transport) *http.Client { return client(t, 30*time.Second) }
