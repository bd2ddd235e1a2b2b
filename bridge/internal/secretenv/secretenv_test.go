package secretenv

import "testing"

func TestIs(t *testing.T) {
	for _, v := range Vars {
		if !Is(v) {
			t.Errorf("Is(%q) = false", v)
		}
	}
	if !Is("mcp_bridge_oauth_client_secret") {
		t.Error("a case variant (one variable on Windows) is not a secret")
	}
	for _, v := range []string{"MCP_BRIDGE_LOG_LEVEL", "HOME", "MCP_BRIDGE_AUTH_TOKEN_X", ""} {
		if Is(v) {
			t.Errorf("Is(%q) = true", v)
		}
	}
}
