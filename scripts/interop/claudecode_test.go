//go:build interop

package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth/authtest"
)

// claudeCode runs the pinned Claude Code CLI with its home and config in
// home: nothing of the machine's own Claude Code setup is read or
// written, and no API key or login is involved (`claude mcp add` and
// `claude mcp list` need none). Non-essential traffic (telemetry, update
// checks) is switched off by Claude Code's documented variables.
func claudeCode(t *testing.T, home string, args ...string) string {
	t.Helper()
	var environ []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "CLAUDE_") || name == "HOME" {
			continue
		}
		environ = append(environ, kv)
	}
	environ = append(environ, "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.nodeModules, ".bin", "claude"), args...)
	cmd.Dir, cmd.Env = home, environ
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// listed returns the `claude mcp list` line of server name.
func listed(list, name string) string {
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, name+": ") {
			return line
		}
	}
	return ""
}

// Issue 12's real-host acceptance: Claude Code's `claude mcp add
// --transport http NAME URL --header "Authorization: Bearer …"` and `claude
// mcp list` show the server connected, with a static token (--auth-token
// from the environment), a token from --auth-token-file, and a JWT of an
// OAuth issuer. Added without the header, the server is listed as failing
// with the bridge's own explanation instead of a bare "404 page not
// found" from a registration endpoint that does not exist.
func TestClaudeCodeConnects(t *testing.T) {
	const static, fromFile = "tok-static-5Yt1", "tok-file-8Qp3"
	home := t.TempDir()
	tokenFile := filepath.Join(home, "tokens")
	if err := os.WriteFile(tokenFile, []byte("# team\nclaude-code:"+fromFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	as := authtest.New("")
	defer as.Close()
	const public = "https://mcp.example.test/mcp"
	jwt := as.Token(authtest.Claims{Subject: "claude-user", Audience: []string{public}, Scope: "mcp:tools"})

	viaEnv := startBridge(t, serveOpts{Child: []string{env.memos}, Env: []string{"MCP_BRIDGE_AUTH_TOKEN=" + static}})
	viaFile := startBridge(t, serveOpts{Child: []string{env.memos}, Flags: []string{"--auth-token-file", tokenFile}})
	viaOAuth := startBridge(t, serveOpts{Child: []string{env.memos}, Flags: []string{"--oauth-issuer", as.Issuer,
		"--public-url", public, "--oauth-scope", "mcp:tools"}})

	claudeCode(t, home, "mcp", "add", "--transport", "http", "static", viaEnv.URL, "--header", "Authorization: Bearer "+static)
	claudeCode(t, home, "mcp", "add", "--transport", "http", "tokenfile", viaFile.URL, "--header", "Authorization: Bearer "+fromFile)
	claudeCode(t, home, "mcp", "add", "--transport", "http", "oauth", viaOAuth.URL, "--header", "Authorization: Bearer "+jwt)
	claudeCode(t, home, "mcp", "add", "--transport", "http", "noheader", viaEnv.URL)
	list := claudeCode(t, home, "mcp", "list")
	t.Logf("claude mcp list:\n%s", list)
	for _, name := range []string{"static", "tokenfile", "oauth"} {
		if line := listed(list, name); !strings.Contains(line, "Connected") || strings.Contains(line, "Failed") {
			t.Errorf("%s: %q, want Connected", name, line)
		}
	}
	if line := listed(list, "noheader"); !strings.Contains(line, "Failed") || !strings.Contains(line, "static bearer token") {
		t.Errorf("noheader: %q, want a failure that says a static bearer token is needed", line)
	}
	if !strings.Contains(viaFile.log(), `"principal":"claude-code"`) {
		t.Error("the token file's name is not the principal in the bridge's log")
	}
	if !strings.Contains(viaOAuth.log(), as.Issuer+" claude-user") {
		t.Error("the OAuth subject is not the principal in the bridge's log")
	}
	for _, b := range []*bridge{viaEnv, viaFile, viaOAuth} {
		for _, tok := range []string{static, fromFile, jwt} {
			if strings.Contains(b.log(), tok) {
				t.Errorf("a token is in the log of %s", b.URL)
			}
		}
	}
}
