package teamconfig

import (
	"errors"
	"strings"
	"testing"
)

// TestChildGetsNoBridgeSecret: the bridge's own credentials (the
// introspection secret above all) are refused wherever they would reach
// a stdio child's argv, environment, command or cwd — by reference, under
// another variable's name, or written out — with a load error that names
// the variable and never shows the value. A remote entry's headers may
// still use them, and other variables reach the child as before.
func TestChildGetsNoBridgeSecret(t *testing.T) {
	const secret = "intro-secret-9f2c41"
	look := env("MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET", secret, "MCP_BRIDGE_AUTH_TOKEN", "tok-a-12345678, tok-b-87654321",
		"MCP_BRIDGE_BEARER_TOKEN", "short", "MY_COPY", secret, "MY_TOKEN", "prefix-tok-b-87654321", "OK", "fine-value")
	for name, entry := range map[string]string{
		"args ref":        `{"command": "srv", "args": ["--secret", "${MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET}"]}`,
		"args default":    `{"command": "srv", "args": ["${MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET:-x}"]}`,
		"env ref":         `{"command": "srv", "env": {"TOKEN": "${MCP_BRIDGE_AUTH_TOKEN}"}}`,
		"short value ref": `{"command": "srv", "env": {"TOKEN": "${MCP_BRIDGE_BEARER_TOKEN}"}}`,
		"command ref":     `{"command": "${MCP_BRIDGE_OAUTH_CLIENT_SECRET:-srv}"}`,
		"cwd ref":         `{"command": "srv", "cwd": "/tmp/${MCP_BRIDGE_INTROSPECTION_CLIENT_ID:-x}"}`,
		"copy":            `{"command": "srv", "args": ["--key=${MY_COPY}"]}`,
		"token in list":   `{"command": "srv", "env": {"T": "${MY_TOKEN}"}}`,
		"written out":     `{"command": "srv", "args": ["--key", "` + secret + `"]}`,
	} {
		_, err := Parse([]byte(`{"mcpServers": {"s": `+entry+`}}`), look)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MCP_BRIDGE_") {
			t.Errorf("%s: err = %v, want a load error naming the variable", name, err)
			continue
		}
		for _, v := range []string{secret, "tok-a-12345678", "tok-b-87654321"} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error shows the secret: %v", name, err)
			}
		}
	}
	for name, entry := range map[string]string{
		"other var":      `{"command": "srv", "args": ["${OK}"], "env": {"K": "${OK}"}}`,
		"remote header":  `{"url": "https://r.example/mcp", "headers": {"Authorization": "Bearer ${MCP_BRIDGE_BEARER_TOKEN}"}}`,
		"short literal":  `{"command": "srv", "args": ["short"]}`,
		"disabled entry": `{"command": "srv", "args": ["${MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET}"], "disabled": true}`,
		"similar name":   `{"command": "srv", "args": ["${MCP_BRIDGE_AUTH_TOKEN_FILE:-f}"]}`,
	} {
		if _, err := Parse([]byte(`{"mcpServers": {"s": `+entry+`}}`), look); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
