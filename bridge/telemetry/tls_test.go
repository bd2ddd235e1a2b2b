package telemetry

import (
	"crypto/tls"
	"testing"
)

// tlsServerConfig serves certPEM and asks for (without verifying) a
// client certificate.
func tlsServerConfig(t *testing.T, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}
}
