package serve

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
)

// modernCall posts a 2026-07-28 tools/call and returns its result text.
func modernCall(t *testing.T, url, token, tool string) string {
	t.Helper()
	hdr := modernHeaders("tools/call", tool)
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	resp, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+modernMeta+`}}`, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", tool, resp.StatusCode, body)
	}
	msgs := messages(t, resp, body)
	return resultText(t, msgs[len(msgs)-1])
}

func resultText(t *testing.T, m map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(m["result"])
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if json.Unmarshal(b, &r) != nil || len(r.Content) == 0 {
		t.Fatalf("no text result in %v", m)
	}
	return r.Content[0].Text
}

// The child's environment holds neither the inbound nor the outbound
// token, under their own names or copied into another variable, in the
// shared child, the probe siblings and a legacy session's own child.
func TestChildEnvironmentHasNoToken(t *testing.T) {
	const in, out = "inbound-s3cret-tok", "outbound-s3cret-tok"
	t.Setenv("MCP_BRIDGE_AUTH_TOKEN", in)
	t.Setenv("MCP_BRIDGE_BEARER_TOKEN", out)
	t.Setenv("MCP_BRIDGE_OAUTH_CLIENT_SECRET", "oauth-client-s3cret")
	t.Setenv("MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET", "introspection-s3cret")
	b := startBridge(t, Config{AuthToken: in, Command: testChild("COPY_OF_TOKEN=" + in)})
	check := func(where, env string) {
		if !strings.Contains(env, testChildEnv+"=legacy") {
			t.Fatalf("%s: not the test child's environment:\n%s", where, env)
		}
		for _, bad := range []string{in, out, "MCP_BRIDGE_AUTH_TOKEN", "MCP_BRIDGE_BEARER_TOKEN", "COPY_OF_TOKEN",
			"oauth-client-s3cret", "introspection-s3cret"} {
			if strings.Contains(env, bad) {
				t.Errorf("%s: the child's environment holds %s", where, bad)
			}
		}
	}
	check("shared child", modernCall(t, b.URL, in, "env"))

	sid := legacyInit(t, b.URL, "Bearer "+in, "2025-11-25")
	resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"env","arguments":{}}}`,
		map[string]string{"Mcp-Session-Id": sid, "Authorization": "Bearer " + in})
	msgs := messages(t, resp, body)
	check("session child", resultText(t, msgs[len(msgs)-1]))
}

// A token on the child's command line is refused at start-up.
func TestTokenInChildArgsRefused(t *testing.T) {
	_, err := New(Config{AuthTokens: []string{"tok-1", "s3cret"}, Command: commandFor("server", "--key=s3cret")})
	if !errors.Is(err, auth.ErrTokenInChild) {
		t.Fatalf("New = %v, want ErrTokenInChild", err)
	}
}

// legacyInit opens a 2025 session (initialize + initialized) and returns
// its id.
func legacyInit(t *testing.T, url, authz, version string) string {
	return legacyInitCaps(t, url, authz, version, `{}`)
}

func legacyInitCaps(t *testing.T, url, authz, version, caps string) string {
	t.Helper()
	hdr := map[string]string{}
	if authz != "" {
		hdr["Authorization"] = authz
	}
	resp, body := rawPost(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`, hdr)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr["Mcp-Session-Id"] = sid
	if resp, body := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); resp.StatusCode != 202 {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	return sid
}
