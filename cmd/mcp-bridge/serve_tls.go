package main

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/tlsreload"
)

// tlsFlags are serve's --tls-cert and --tls-key. Their listen opens the
// listener of every way serve runs (one command, or --config), so that
// TLS is the same everywhere.
type tlsFlags struct{ cert, key string }

func (t *tlsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.cert, "tls-cert", "", "serve HTTPS (HTTP/2 or HTTP/1.1, TLS 1.2+) with this PEM certificate `file` (leaf first, then intermediates); re-read when it changes; needs --tls-key")
	fs.StringVar(&t.key, "tls-key", "", "the PEM private key `file` of --tls-cert; re-read when it changes")
}

// check is the usage check, made before anything is started.
func (t *tlsFlags) check() error {
	if (t.cert == "") != (t.key == "") {
		return usagef("--tls-cert and --tls-key go together: set both or neither")
	}
	return nil
}

// listen opens addr: TCP, and TLS on top when the flags ask for it, with
// the certificate files watched (certs is nil without TLS; its Reload is
// for a SIGHUP). net/http's Server speaks HTTP/2 on a TLS listener whose
// ALPN offers h2, as CertFiles.TLSConfig does.
func (t *tlsFlags) listen(addr string, log zerolog.Logger) (ln net.Listener, certs *tlsreload.CertFiles, err error) {
	if t.cert != "" {
		if certs, err = tlsreload.LoadCertFiles(t.cert, t.key, log); err != nil {
			return nil, nil, err
		}
	}
	if ln, err = net.Listen("tcp", addr); err != nil {
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	if certs != nil {
		ln = tls.NewListener(ln, certs.TLSConfig())
	}
	return ln, certs, nil
}

// baseURL is what clients dial: http(s)://host:port of ln.
func baseURL(ln net.Listener, certs *tlsreload.CertFiles) string {
	if certs != nil {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}
