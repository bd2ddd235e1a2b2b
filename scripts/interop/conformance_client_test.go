//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The conformance suite 0.1.16's client scenarios, in its order
// (`conformance list --client`).
var clientScenarios = []string{
	"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
	"auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow",
}

// throughConnect says whether a client scenario can run through `mcp-bridge
// connect`, and if not, why. Since connect has its own OAuth client every
// scenario can: the auth/* ones use it (see drivers/conformance-client.mjs);
// cross-app access alone still gets its token from the host, because its
// IdP → ID-JAG → jwt-bearer exchange is an enterprise extension connect
// does not implement.
func throughConnect(scenario string) (ok bool, why string) {
	return true, ""
}

// clientRun is one `conformance client` run of one scenario.
type clientRun struct {
	Scenario  string      `json:"scenario"`
	Via       string      `json:"via"`
	Passed    bool        `json:"passed"`
	Success   int         `json:"success"`
	Failure   int         `json:"failure"`
	Warning   int         `json:"warning"`
	Exit      int         `json:"exit"`
	Seconds   float64     `json:"seconds"`
	Checks    []confCheck `json:"checks,omitempty"`
	Output    string      `json:"-"`
	NA        string      `json:"notApplicable,omitempty"`
	BridgeLog string      `json:"bridgeLog,omitempty"`
	BridgeEnd *childExit  `json:"bridgeExit,omitempty"`
}

// (connect 3) The official conformance suite's client scenarios. The client
// under test is drivers/conformance-client.mjs (a TS SDK v1 client doing
// what the suite's own everything-client does), run twice per scenario:
// talking HTTP to the scenario server directly, and as a stdio host of
// `mcp-bridge connect SCENARIO-URL`. Every scenario that passes directly
// must pass through the bridge, unless it cannot apply there (OAuth flows
// driven by the endpoint's 401; see throughConnect), and the bridge must
// exit cleanly after each run.
func TestConformanceClientScenarios(t *testing.T) {
	art := artifactDir(t)
	driver := filepath.Join(env.interopDir, "drivers", "conformance-client.mjs")
	if strings.ContainsAny(env.node+driver+art, " \t") {
		t.Fatalf("the conformance runner splits --command on spaces; paths with spaces are not supported: %q %q", env.node, driver)
	}
	bridgeLogs := filepath.Join(art, "connect-logs")
	if err := os.MkdirAll(bridgeLogs, 0o755); err != nil {
		t.Fatal(err)
	}

	// Scenarios with timing checks (sse-retry) run one at a time; the
	// auth scenarios four at a time.
	runAll := func(via string, names []string, parallel int) map[string]*clientRun {
		out := map[string]*clientRun{}
		var mu sync.Mutex
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r := runClientScenario(art, bridgeLogs, driver, via, name)
				mu.Lock()
				out[name] = r
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}
	var basic, auth, bridgeable []string
	for _, s := range clientScenarios {
		if strings.HasPrefix(s, "auth/") {
			auth = append(auth, s)
		} else {
			basic = append(basic, s)
		}
		if ok, _ := throughConnect(s); ok {
			bridgeable = append(bridgeable, s)
		}
	}
	t0 := time.Now()
	direct := runAll("direct", basic, 1)
	for k, v := range runAll("direct", auth, 4) {
		direct[k] = v
	}
	tDirect := time.Since(t0)
	t0 = time.Now()
	via := runAll("bridge", bridgeable, 1)
	tBridge := time.Since(t0)
	for _, s := range clientScenarios {
		if ok, why := throughConnect(s); !ok {
			via[s] = &clientRun{Scenario: s, Via: "bridge", NA: why}
		}
	}

	table := clientTable(direct, via, tDirect, tBridge)
	t.Logf("conformance 0.1.16 client scenarios, client drivers/conformance-client.mjs (TS SDK 1.32.2) on Node %s, suite on Node %s, %s/%s, %d CPUs, %s:\n%s",
		nodeVersion(env.node), nodeVersion(env.node22), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), table)
	_ = os.WriteFile(filepath.Join(art, "conformance-client-table.md"), []byte(table), 0o644)
	if j, err := json.MarshalIndent(map[string]any{"direct": direct, "bridge": via}, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(art, "conformance-client-results.json"), j, 0o644)
	}

	passedDirect := 0
	for _, s := range clientScenarios {
		d, v := direct[s], via[s]
		if d.Passed {
			passedDirect++
		}
		switch {
		case v.NA != "":
		case d.Passed && !v.Passed:
			t.Errorf("BRIDGE REGRESSION: client scenario %s passes directly but fails through mcp-bridge connect (exit %d):\n%s\n%s",
				s, v.Exit, failedChecks(&confScenario{Name: s, Checks: v.Checks, Failure: v.Failure}), tail(v.Output, 30))
		}
		if v.NA == "" {
			if !v.BridgeEnd.clean() {
				t.Errorf("BRIDGE BUG: client scenario %s: mcp-bridge connect did not exit cleanly once the host closed its stdin: %s (log %s; "+
					"see docs/interop.md, Bridge problems found 2 and 4)", s, v.BridgeEnd, v.BridgeLog)
			}
			if b, err := os.ReadFile(v.BridgeLog); err == nil {
				checkLogClean(t, "mcp-bridge connect ("+s+")", string(b))
				// The auth runs log at trace level; no token may appear.
				// The scenario servers' tokens are test-token-<ms> and cc-token-<ms>.
				if m := tokenRE.FindString(string(b)); m != "" {
					t.Errorf("BRIDGE BUG: client scenario %s: the connect log contains the token %q (log %s)", s, m, v.BridgeLog)
				}
			} else {
				t.Errorf("client scenario %s: no mcp-bridge connect log: %v", s, err)
			}
		}
	}
	// The baseline must be meaningful: the core scenarios pass directly.
	// sse-retry also checks reconnection timing (450–700 ms), which a
	// loaded machine can miss; a direct failure there is only logged.
	for _, s := range basic {
		switch {
		case direct[s].Passed:
		case s == "sse-retry":
			t.Logf("note: sse-retry fails directly (timing on a loaded machine?), so it is not compared:\n%s", tail(direct[s].Output, 20))
		default:
			t.Errorf("client scenario %s fails directly (the client under test is broken, nothing to compare):\n%s", s, tail(direct[s].Output, 30))
		}
	}
	if passedDirect < len(basic)-1 {
		t.Fatalf("only %d client scenarios pass directly", passedDirect)
	}
}

var (
	tokenRE        = regexp.MustCompile(`(test|cc)-token-[0-9]+`)
	clientPassedRE = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`)
	ansiRE         = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// runClientScenario runs `conformance client --command "NODE DRIVER --via
// VIA" --scenario NAME` with Node 22, bounded by conformanceTimeout.
func runClientScenario(art, bridgeLogs, driver, via, name string) *clientRun {
	r := &clientRun{Scenario: name, Via: via, Exit: -1}
	out := filepath.Join(art, "conformance-client-"+via, strings.ReplaceAll(name, "/", "_"))
	_ = os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		r.Output = err.Error()
		return r
	}
	base := filepath.Join(bridgeLogs, strings.ReplaceAll(name, "/", "_"))
	if via == "bridge" {
		_ = os.Remove(base + ".log")
		_ = os.Remove(base + ".exit.json")
	}
	// mcp-remote loads a large bundle before it reads stdin (about 10 s on
	// a loaded 2-core machine): its runs get more time, since the
	// comparison is about behaviour, not start-up.
	clientTimeout, runTimeout := "30000", 90*time.Second
	if via == "mcp-remote" {
		clientTimeout, runTimeout = "90000", 150*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := conformanceCommand(ctx, "client", "--command", env.node+" "+driver+" --via "+via, "--scenario", name, "--timeout", clientTimeout, "-o", out)
	cmd.Env = append(os.Environ(), "MCP_INTEROP_BRIDGE="+env.bridge, "MCP_INTEROP_BRIDGE_LOG_DIR="+bridgeLogs, "MCP_INTEROP_BROWSER="+env.browser)
	t0 := time.Now()
	b, _ := cmd.CombinedOutput()
	r.Seconds = time.Since(t0).Seconds()
	r.Output = ansiRE.ReplaceAllString(string(b), "")
	_ = os.WriteFile(filepath.Join(out, "output.txt"), []byte(r.Output), 0o644)
	if cmd.ProcessState != nil {
		r.Exit = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		r.Output += fmt.Sprintf("\n(interop: the conformance runner did not finish within %v)", runTimeout)
	}
	if m := clientPassedRE.FindStringSubmatch(r.Output); m != nil {
		r.Success, _ = strconv.Atoi(m[1])
		r.Failure, _ = strconv.Atoi(m[3])
		r.Warning, _ = strconv.Atoi(m[4])
	}
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			if cb, err := os.ReadFile(p); err == nil {
				_ = json.Unmarshal(cb, &r.Checks)
			}
		}
		return nil
	})
	r.Passed = r.Exit == 0 && strings.Contains(r.Output, "OVERALL: PASSED") && r.Failure == 0 && r.Warning == 0
	if via == "bridge" {
		r.BridgeLog = base + ".log"
		if eb, err := os.ReadFile(base + ".exit.json"); err == nil {
			var c childExit
			if json.Unmarshal(eb, &c) == nil {
				r.BridgeEnd = &c
			}
		}
	}
	return r
}

func clientCell(r *clientRun) string {
	if r == nil {
		return "not run"
	}
	if r.NA != "" {
		return "n/a"
	}
	mark := "✓"
	if !r.Passed {
		mark = "✗"
	}
	c := fmt.Sprintf("%s %d/%d", mark, r.Success, r.Success+r.Failure)
	if r.Warning > 0 {
		c += fmt.Sprintf(" (%d warning)", r.Warning)
	}
	if !r.Passed && r.Exit != 0 {
		c += fmt.Sprintf(" exit %d", r.Exit)
	}
	return c
}

func clientTable(direct, via map[string]*clientRun, tDirect, tBridge time.Duration) string {
	var b strings.Builder
	b.WriteString("| scenario | direct (StreamableHTTPClientTransport) | through mcp-bridge connect (StdioClientTransport) |\n|---|---|---|\n")
	count := func(m map[string]*clientRun) (pass, applicable, ok, scored int) {
		for _, r := range m {
			if r.NA != "" {
				continue
			}
			applicable++
			if r.Passed {
				pass++
			}
			ok += r.Success
			scored += r.Success + r.Failure
		}
		return
	}
	var nas []string
	for _, s := range clientScenarios {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s, clientCell(direct[s]), clientCell(via[s]))
		if v := via[s]; v != nil && v.NA != "" {
			nas = append(nas, s)
		}
	}
	dp, da, dok, dsc := count(direct)
	vp, va, vok, vsc := count(via)
	fmt.Fprintf(&b, "| **scenarios passing** | **%d of %d** | **%d of %d** (%d n/a) |\n", dp, da, vp, va, len(nas))
	fmt.Fprintf(&b, "| **checks ok / scored** | **%d/%d** | **%d/%d** |\n", dok, dsc, vok, vsc)
	fmt.Fprintf(&b, "| wall time (all runs) | %.1f s | %.1f s |\n", tDirect.Seconds(), tBridge.Seconds())
	sort.Strings(nas)
	if len(nas) > 0 {
		_, why := throughConnect(nas[0])
		fmt.Fprintf(&b, "\nn/a through connect (%d): %s — %s\n", len(nas), strings.Join(nas, ", "), why)
	}
	var exits []string
	for _, s := range clientScenarios {
		v := via[s]
		if v == nil || v.NA != "" {
			continue
		}
		if e := v.BridgeEnd; !e.clean() || (e.ExitAfterStdinCloseMs != nil && *e.ExitAfterStdinCloseMs > 1500) {
			exits = append(exits, fmt.Sprintf("%s: %s", s, e))
		}
	}
	if len(exits) > 0 {
		b.WriteString("\nmcp-bridge connect did not exit promptly (or cleanly) at stdin EOF:\n")
		for _, e := range exits {
			b.WriteString("- " + e + "\n")
		}
	}
	return b.String()
}
