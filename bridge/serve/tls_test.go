package serve

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
	"github.com/mcp-bridge/mcp-bridge/bridge/tlsreload"
)

// serveTLS serves h over TLS with cf's configuration (testmain.ServeTLS).
func serveTLS(t *testing.T, h http.Handler, cf *tlsreload.CertFiles) string {
	t.Helper()
	return testmain.ServeTLS(t, h, cf.TLSConfig())
}

func httpsClient(ca *testmain.CA, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
	}
	return &http.Client{Transport: tr}
}

// The Go SDK client over HTTPS, trusting only the test CA, calls a tool
// of a child served by the Handler, over HTTP/2.
func TestTLSGoSDKClientHTTP2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca := testmain.NewCA(t)
	c, k := ca.Issue(t, 1)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if os.WriteFile(certFile, c, 0o600) != nil || os.WriteFile(keyFile, k, 0o600) != nil {
		t.Fatal("writing the pair")
	}
	cf, err := tlsreload.LoadCertFiles(certFile, keyFile, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, Config{}, bins["memos"])
	var h1, h2 atomic.Int64
	addr := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		} else {
			h1.Add(1)
		}
		b.Handler.ServeHTTP(w, r)
	}), cf)

	for _, v := range sdkVersions {
		t.Run(v.name, func(t *testing.T) {
			hc := httpsClient(ca, true)
			defer hc.CloseIdleConnections()
			client := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "https://" + addr + "/mcp", HTTPClient: hc, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: v.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memo_list_memos", Arguments: map[string]any{"pageSize": 1}})
			if err != nil || res.IsError || !strings.Contains(toolText(t, res), "memos/") {
				t.Fatalf("memo_list_memos over HTTPS = %+v, %v", res, err)
			}
		})
	}
	if h2.Load() == 0 || h1.Load() != 0 {
		t.Errorf("requests over HTTP/2: %d, over HTTP/1.1: %d; want all over HTTP/2", h2.Load(), h1.Load())
	}

	// ALPN offers http/1.1 too, for clients without HTTP/2.
	hc := httpsClient(ca, false)
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
		t.Errorf("HTTP/1.1 client: %s %d", resp.Proto, resp.StatusCode)
	}
	// TLS 1.2 is the least accepted (RFC 9113 §9.2 for HTTP/2).
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, MaxVersion: tls.VersionTLS11})
	if err == nil {
		conn.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}
}
