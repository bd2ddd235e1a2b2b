package main

import (
	"net/http"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/httpclient"
	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

// connect with OAuth on (the default) sends through oauthHTTPClient; its
// transport must keep as many idle connections as httpclient's own. It
// kept DefaultTransport's 64 per host (100 in all), so at 256 and 1,024
// calls in flight every call above them dialed a connection and closed it
// after one use, bridge and remote alike (issue 13, docs/benchmarks.md).
func TestOAuthClientIdlePool(t *testing.T) {
	ot, ok := oauthHTTPClient(nil, nil).Transport.(*oauth.Transport)
	if !ok {
		t.Fatalf("transport %T, want *oauth.Transport", oauthHTTPClient(nil, nil).Transport)
	}
	got, ok := ot.Base.(*http.Transport)
	if !ok {
		t.Fatalf("base transport %T, want *http.Transport", ot.Base)
	}
	want := httpclient.NewTransport()
	if got.MaxIdleConnsPerHost != want.MaxIdleConnsPerHost || got.MaxIdleConns != want.MaxIdleConns || got.IdleConnTimeout != want.IdleConnTimeout {
		t.Fatalf("OAuth transport idle pool: %d per host, %d in all, %v idle timeout; httpclient's: %d, %d, %v",
			got.MaxIdleConnsPerHost, got.MaxIdleConns, got.IdleConnTimeout, want.MaxIdleConnsPerHost, want.MaxIdleConns, want.IdleConnTimeout)
	}
	if got.MaxIdleConnsPerHost < 1024 {
		t.Fatalf("OAuth transport keeps %d idle connections per host, want ≥ 1024", got.MaxIdleConnsPerHost)
	}
}
