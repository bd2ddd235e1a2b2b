package bridge

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcp-bridge/mcp-bridge"

// TestImportRules enforces the layout's one-way imports (design: cmd →
// bridge → {httpclient, stdiohost → lineio}; nothing imports cmd or
// examples) and the packages' own limits.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := map[string][]string{
		// package prefix: imports it must not have
		module + "/lineio":     {module + "/", "encoding/json", "net/http", "os/exec", "github.com/rs/zerolog"},
		module + "/httpclient": {module + "/", "os/exec"},
		// oauth runs the browser command, so it may use os/exec; it is a
		// leaf too: nothing of this module, httpclient included, but the
		// outbound policy (allowedInternal).
		module + "/httpclient/oauth": {module + "/"},
		// The outbound HTTP policy every client of the binary goes by
		// (redirects, redaction): a leaf that anything may import.
		module + "/httpclient/outbound": {module + "/", "os/exec", "os"},
		module + "/stdiohost":           {module + "/bridge", module + "/httpclient", module + "/cmd", "net/http"},
		module + "/bridge":              {module + "/cmd", module + "/examples", "github.com/spf13/pflag", "os/signal"},
		// The era translations sit below both directions: they may use
		// bridge/wire, nothing that owns a transport.
		module + "/bridge/translate": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/remote", module + "/httpclient", module + "/stdiohost", module + "/lineio", "net/http", "os/exec"},
		module + "/bridge/wire":      {module + "/"},
		// serve's stream engine (responder, sinks, detached streams,
		// replay): it speaks HTTP — it writes responses and owns hijacked
		// connections — but knows nothing of sessions, children, eras or
		// either face. Of the module only wire and the warning rate limit.
		module + "/bridge/stream": {module + "/"},
		// The two directions never import each other; bridge/gateway is
		// where they meet (checked below).
		module + "/bridge/serve":   {module + "/bridge/connect", module + "/bridge/gateway"},
		module + "/bridge/connect": {module + "/bridge/serve", module + "/bridge/gateway"},
		// connect's remote side: the MCP server as a peer over Streamable
		// HTTP (httpclient), with or without a 2025 session. It knows
		// nothing of the host nor of the faces: what the host side needs
		// it is handed (remote.Config's callbacks, remote.Call).
		module + "/bridge/remote": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/gateway", module + "/bridge/aggregate",
			module + "/bridge/stream", module + "/bridge/exec", module + "/lineio", module + "/stdiohost", "os/exec"},
		// serve's child side: the stdio child as a peer (its connection,
		// calls routed by child id, the shared, legacy-shared,
		// per-principal and warm children, the era probe's siblings). It
		// runs processes through stdiohost and speaks no HTTP; serve wires
		// it to its HTTP front, never the other way round.
		module + "/bridge/child": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/gateway", module + "/bridge/aggregate", module + "/httpclient", "net/http"},
		// The config file parser owns nothing that runs.
		module + "/bridge/teamconfig": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/gateway", "net/http", "os/exec"},
		// The aggregate multiplexes JSON-RPC lines; the gateway gives it
		// its streams, so it owns no transport and no process.
		module + "/bridge/aggregate": {module + "/bridge/gateway", module + "/bridge/serve", module + "/bridge/connect", module + "/httpclient", module + "/stdiohost", "net/http", "os/exec"},
		// Metrics and traces sit below both directions, which report to
		// them: no transport of their own, nothing of serve or connect.
		// The HTTP observation (http.go) may name bridge/stream's
		// Observer: a detached stream takes its request's along.
		module + "/bridge/telemetry": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/gateway", module + "/httpclient", module + "/stdiohost", module + "/lineio", "os/exec"},
		// exec is a stdio server of its own: it runs programs through
		// stdiohost and answers with wire/translate, and owns no HTTP.
		module + "/bridge/exec": {module + "/bridge/serve", module + "/bridge/connect", module + "/bridge/gateway", module + "/bridge/aggregate", module + "/httpclient", "net/http"},
		module + "/examples":    {module + "/cmd"},
		// serve's authorization (the Host/Origin checks and CORS, static
		// tokens, principals, the OAuth resource server): below serve and
		// the gateway, which ask it, and owning no MCP transport or
		// process; its HTTP clients follow the outbound policy, and CORS
		// names the MCP headers of bridge/wire (allowedInternal).
		module + "/bridge/auth": {module + "/bridge/", module + "/httpclient", module + "/stdiohost", module + "/lineio", "os/exec"},
		// TLS certificate reload for a listener: a leaf that knows no MCP.
		module + "/bridge/tlsreload": {module + "/", "net/http", "os/exec"},
		// The goroutine owner of every long-lived object (Handler,
		// Bridge, Gateway, the aggregate's sessions): a leaf.
		module + "/bridge/internal/lifecycle": {module + "/"},
	}
	allowedInternal := map[string][]string{
		module + "/stdiohost": {module + "/lineio"},
		// Every HTTP client follows the one outbound policy.
		module + "/httpclient/oauth": {module + "/httpclient/outbound"},
		module + "/bridge/telemetry": {module + "/httpclient/outbound"},
		module + "/bridge/stream":    {module + "/bridge/wire", module + "/bridge/internal/ratelog"},
		module + "/bridge/auth":      {module + "/httpclient/outbound", module + "/bridge/internal/secretenv", module + "/bridge/wire"},
	}
	// Both directions translate through bridge/translate, none on its own.
	mustImport := map[string]string{
		module + "/bridge/serve":   module + "/bridge/translate",
		module + "/bridge/connect": module + "/bridge/translate",
		module + "/bridge/child":   module + "/bridge/translate",
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		if want, ok := mustImport[pkg]; ok && !slices.Contains(strings.Fields(imports), want) {
			t.Errorf("%s does not import %s", pkg, want)
		}
		// The aggregate reaches each route in-process (serve.Handler.Open),
		// not through HTTP over a net.Pipe: the gateway has no use for
		// package net.
		if pkg == module+"/bridge/gateway" && slices.Contains(strings.Fields(imports), "net") {
			t.Errorf("%s imports net: the aggregate's routes are reached in-process (serve.Handler.Open), not over a connection", pkg)
		}
		for prefix, bad := range forbidden {
			if pkg != prefix && !strings.HasPrefix(pkg, prefix+"/") {
				continue
			}
			if prefix == module+"/httpclient" && (strings.HasPrefix(pkg, module+"/httpclient/oauth") || strings.HasPrefix(pkg, module+"/httpclient/outbound")) {
				continue // their own rules above
			}
		imports:
			for _, imp := range strings.Fields(imports) {
				for _, ok := range allowedInternal[prefix] {
					if imp == ok {
						continue imports
					}
				}
				for _, b := range bad {
					if imp == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(imp, b) && !strings.HasPrefix(imp, pkg)) ||
						(!strings.HasSuffix(b, "/") && strings.HasPrefix(imp, b+"/")) {
						t.Errorf("%s imports %s, which the layout forbids", pkg, imp)
					}
				}
			}
		}
		// Of the library, only bridge/gateway may import both directions
		// (cmd and scripts are programs), and nothing but cmd imports the
		// gateway.
		imps := strings.Fields(imports)
		isCmd := strings.HasPrefix(pkg, module+"/cmd/")
		if strings.HasPrefix(pkg, module+"/bridge/") && pkg != module+"/bridge/gateway" &&
			slices.Contains(imps, module+"/bridge/serve") && slices.Contains(imps, module+"/bridge/connect") {
			t.Errorf("%s imports both bridge/serve and bridge/connect: only bridge/gateway and cmd may", pkg)
		}
		if !isCmd && pkg != module+"/bridge/gateway" && slices.Contains(imps, module+"/bridge/gateway") {
			t.Errorf("%s imports bridge/gateway: only cmd may", pkg)
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module+"/cmd") || strings.HasPrefix(imp, module+"/examples") {
				if !strings.HasPrefix(pkg, imp) {
					t.Errorf("%s imports %s: nothing may import cmd/ or examples/", pkg, imp)
				}
			}
		}
	}
}
