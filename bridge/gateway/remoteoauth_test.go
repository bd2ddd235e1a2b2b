package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
)

// Issue 26: a remote entry with "oauth" reaches its server through the
// client Config.RemoteClient gives for it (an OAuth client in the bridge:
// here one that adds the token), and is refused at New without one, with
// the entry named.
func TestGatewayRemoteOAuthClient(t *testing.T) {
	remote := remoteServer(t)
	file := `{"mcpServers": {"remote": {"url": "` + remote + `", "oauth": {"clientId": "c1"}}}}`
	if _, err := New(Config{}, parse(t, file)); err == nil || !strings.Contains(err.Error(), "server remote: has \"oauth\" settings") {
		t.Fatalf("New without RemoteClient: %v", err)
	}
	var asked []*teamconfig.Server
	gw := startGatewayCfg(t, file, Config{RemoteClient: func(s *teamconfig.Server) (*http.Client, error) {
		asked = append(asked, s)
		return &http.Client{Transport: bearer{token: remoteToken, base: http.DefaultTransport}}, nil
	}})
	if len(asked) != 1 || asked[0].Name != "remote" || asked[0].OAuth == nil || asked[0].OAuth.ClientID != "c1" {
		t.Fatalf("RemoteClient asked for %+v", asked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectSDK(t, ctx, gw.URL+Path("remote"), "2025-11-25")
	if got := callOK(t, ctx, cs, "whereami"); got != "remote" {
		t.Fatalf("whereami = %q", got)
	}
}
