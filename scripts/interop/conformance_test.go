//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	conformanceTimeout = 4 * time.Minute
	// conformanceSuite: "all" runs the active scenarios and the pending ones
	// (json-schema-2020-12, server-sse-polling); both runs use the same list.
	conformanceSuite = "all"
)

// confCheck is one entry of a scenario's checks.json.
type confCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage,omitempty"`
}

type confScenario struct {
	Name            string      `json:"name"`
	Success         int         `json:"success"`
	Failure         int         `json:"failure"`
	Warning         int         `json:"warning"`
	Info            int         `json:"info"`
	Checks          []confCheck `json:"checks"`
	FromSummaryOnly bool        `json:"fromSummaryOnly,omitempty"` // no checks.json: counts from stdout
}

func (s *confScenario) passes() bool { return s.Failure == 0 }

type confRun struct {
	Label     string                   `json:"label"`
	URL       string                   `json:"url"`
	Seconds   float64                  `json:"seconds"`
	Exit      int                      `json:"exit"`
	Order     []string                 `json:"order"`
	Scenarios map[string]*confScenario `json:"scenarios"`
	Passed    int                      `json:"passedChecks"`
	Failed    int                      `json:"failedChecks"`
}

// (c) The official conformance suite's server scenarios, run against the go-sdk
// everything-server three times: serving Streamable HTTP by itself
// (stateful, the 2025-era mode the scenarios use), as a stdio child behind
// `mcp-bridge serve` (the bridge's probe finds it dual-era: pass-through),
// and behind `mcp-bridge serve --child-protocol legacy` (the child treated as
// legacy-only, the bridge's translating configuration). Whatever passes
// directly must pass through the bridge in both configurations, and
// dns-rebinding-protection must pass through the bridge.
func TestConformanceServerScenarios(t *testing.T) {
	_, addr := startDirect(t, "everything-server-http", func(addr string) []string {
		return []string{env.everything, "-http", addr, "-stateless=false"}
	})
	direct := runConformance(t, "direct", "http://"+addr+"/mcp")

	b := startBridge(t, serveOpts{Child: []string{env.everything}})
	via := runConformance(t, "mcp-bridge", b.URL)

	bl := startBridge(t, serveOpts{Flags: []string{"--child-protocol", "legacy"}, Child: []string{env.everything}})
	legacy := runConformance(t, "mcp-bridge-legacy-child", bl.URL)

	labels := []string{"direct (everything-server -http, stateful)", "through mcp-bridge serve (stdio child)",
		"through mcp-bridge serve --child-protocol legacy"}
	runs := []*confRun{direct, via, legacy}
	table := conformanceTableN(labels, runs)
	t.Logf("conformance %s server scenarios (suite %q), Node %s, %s/%s, %d CPUs, %s:\n%s",
		"0.1.16", conformanceSuite, nodeVersion(env.node22), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		time.Now().UTC().Format("2006-01-02"), table)
	art := artifactDir(t)
	_ = os.WriteFile(filepath.Join(art, "conformance-table.md"), []byte(table), 0o644)
	if j, err := json.MarshalIndent(runs, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(art, "conformance-results.json"), j, 0o644)
	}

	// The pinned suite (0.1.16, --suite all) has 32 server scenarios.
	if direct.Passed == 0 || len(direct.Order) < 30 {
		t.Fatalf("the direct run has %d scenarios and %d passing checks: the baseline is broken, nothing to compare (see %s)",
			len(direct.Order), direct.Passed, art)
	}
	compareConformance(t, direct, via, "mcp-bridge")
	compareConformance(t, direct, legacy, "mcp-bridge --child-protocol legacy")
	for _, r := range []*confRun{via, legacy} {
		dns, ok := r.Scenarios["dns-rebinding-protection"]
		switch {
		case !ok:
			t.Errorf("dns-rebinding-protection did not run through %s", r.Label)
		case !dns.passes() || dns.Success == 0:
			t.Errorf("dns-rebinding-protection must pass through %s: %d ok, %d failed\n%s", r.Label, dns.Success, dns.Failure, failedChecks(dns))
		}
	}
}

// (translation 7) The same suite against server-everything 2026.8.31, a
// legacy-only server: once serving Streamable HTTP by itself, once as the
// stdio child of `mcp-bridge serve`, whose probe must find it legacy-only
// (the configuration in which the bridge translates for 2026-07-28
// clients; the suite's client is a 2025-era one and gets a session and a
// child of its own). server-everything is not the suite's reference server
// and fails many scenarios by itself; through the bridge it must pass every
// scenario it passes directly, and at least as many.
func TestConformanceServerEverythingLegacyChild(t *testing.T) {
	url, _ := serverEverythingHTTP(t)
	direct := runConformance(t, "direct", url)

	b := startBridge(t, serveOpts{Child: serverEverythingStdio()})
	via := runConformance(t, "mcp-bridge", b.URL)
	if !strings.Contains(b.log(), "legacy child") {
		t.Errorf("the bridge did not report server-everything as a legacy child (its probe must find it legacy-only)")
	}

	table := conformanceTableN([]string{"direct (server-everything streamableHttp)", "through mcp-bridge serve (server-everything stdio, legacy-only child)"},
		[]*confRun{direct, via})
	t.Logf("conformance 0.1.16 server scenarios (suite %q) against server-everything 2026.8.31, Node %s, %d CPUs, %s:\n%s",
		conformanceSuite, nodeVersion(env.node22), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), table)
	art := artifactDir(t)
	_ = os.WriteFile(filepath.Join(art, "conformance-table.md"), []byte(table), 0o644)
	if j, err := json.MarshalIndent([]*confRun{direct, via}, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(art, "conformance-results.json"), j, 0o644)
	}
	if len(direct.Order) < 30 {
		t.Fatalf("the direct run has %d scenarios: the baseline is broken (see %s)", len(direct.Order), art)
	}
	compareConformance(t, direct, via, "mcp-bridge")
}

// compareConformance fails the test if a scenario that passes in base fails
// (or did not run) in via, or if via passes fewer scenarios; checks that
// succeed in base but are only INFO/WARNING/absent in via are logged.
func compareConformance(t *testing.T, base, via *confRun, what string) {
	t.Helper()
	for _, name := range base.Order {
		d := base.Scenarios[name]
		v, ok := via.Scenarios[name]
		switch {
		case !ok:
			t.Errorf("BRIDGE REGRESSION: scenario %s ran directly but has no result through %s", name, what)
		case d.passes() && !v.passes():
			t.Errorf("BRIDGE REGRESSION: scenario %s passes directly but fails through %s:\n%s", name, what, failedChecks(v))
		}
		if ok {
			for _, c := range downgraded(d, v) {
				t.Logf("note (%s): %s", what, c)
			}
		}
	}
	if bp, vp := scenariosPassing(base), scenariosPassing(via); vp < bp {
		t.Errorf("%d scenarios pass through %s, %d directly: want at least as many", vp, what, bp)
	}
}

func scenariosPassing(r *confRun) int {
	n := 0
	for _, s := range r.Scenarios {
		if s.passes() {
			n++
		}
	}
	return n
}

// runConformance runs `conformance server --url URL --suite all -o DIR` with
// Node 22 and reads the per-scenario checks.json files it writes.
func runConformance(t *testing.T, label, url string) *confRun {
	t.Helper()
	out := filepath.Join(artifactDir(t), "conformance-"+label)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
	defer cancel()
	cmd := conformanceCommand(ctx, "server", "--url", url, "--suite", conformanceSuite, "-o", out)
	logPath := filepath.Join(out, "output.txt")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	runErr := cmd.Run()
	run := &confRun{Label: label, URL: url, Seconds: time.Since(t0).Seconds(), Exit: -1, Scenarios: map[string]*confScenario{}}
	if cmd.ProcessState != nil {
		run.Exit = cmd.ProcessState.ExitCode()
	}
	output, _ := os.ReadFile(logPath)
	if ctx.Err() != nil {
		t.Fatalf("conformance (%s) did not finish within %v\n%s", label, conformanceTimeout, tail(string(output), 40))
	}
	if err := parseConformance(run, string(output), out); err != nil {
		t.Fatalf("conformance (%s): %v (run error %v)\n%s", label, err, runErr, tail(string(output), 40))
	}
	t.Logf("conformance against %s (%s): %d scenarios, %d checks ok, %d checks failed, exit %d, %.1fs; output in %s",
		label, url, len(run.Order), run.Passed, run.Failed, run.Exit, run.Seconds, out)
	return run
}

// conformanceCommand runs the conformance suite's CLI with Node 22.
func conformanceCommand(ctx context.Context, args ...string) *exec.Cmd {
	cli := filepath.Join(env.nodeModules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	return groupCommand(ctx, env.node22, append([]string{cli}, args...)...)
}

var (
	summaryLineRE = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	resultDirRE   = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
)

func parseConformance(run *confRun, output, dir string) error {
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		m := summaryLineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		if _, dup := run.Scenarios[m[1]]; !dup {
			run.Order = append(run.Order, m[1])
		}
		run.Scenarios[m[1]] = &confScenario{Name: m[1], FromSummaryOnly: true, Success: p, Failure: f}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		m := resultDirRE.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var checks []confCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s/checks.json: %v", e.Name(), err)
		}
		s, ok := run.Scenarios[m[1]]
		if !ok {
			s = &confScenario{Name: m[1]}
			run.Scenarios[m[1]] = s
			run.Order = append(run.Order, m[1])
		}
		s.Checks, s.FromSummaryOnly = checks, false
		s.Success, s.Failure, s.Warning, s.Info = 0, 0, 0, 0
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				s.Success++
			case "FAILURE":
				s.Failure++
			case "WARNING":
				s.Warning++
			default:
				s.Info++
			}
		}
	}
	if len(run.Order) == 0 {
		return fmt.Errorf("no scenario results in the output or %s", dir)
	}
	for _, s := range run.Scenarios {
		run.Passed += s.Success
		run.Failed += s.Failure
	}
	return nil
}

func failedChecks(s *confScenario) string {
	var b strings.Builder
	for _, c := range s.Checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			fmt.Fprintf(&b, "  - %s %s (%s): %s\n", c.Status, c.ID, c.Name, c.ErrorMessage)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "  (%d failed per the suite's summary; no checks.json)\n", s.Failure)
	}
	return b.String()
}

// downgraded lists checks that succeed directly but not through the bridge
// (failures are reported separately; this shows INFO/WARNING/missing).
func downgraded(d, v *confScenario) []string {
	status := map[string]string{}
	for _, c := range v.Checks {
		status[c.ID] = c.Status
	}
	var out []string
	for _, c := range d.Checks {
		if c.Status != "SUCCESS" {
			continue
		}
		got, ok := status[c.ID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: check %s succeeds directly, absent through mcp-bridge", d.Name, c.ID))
		case got != "SUCCESS" && got != "FAILURE":
			msg := ""
			for _, vc := range v.Checks {
				if vc.ID == c.ID && vc.ErrorMessage != "" {
					msg = ": " + vc.ErrorMessage
				}
			}
			out = append(out, fmt.Sprintf("%s: check %s succeeds directly, %s through mcp-bridge%s", d.Name, c.ID, got, msg))
		}
	}
	return out
}

// cell renders a scenario's result without the "N passed, N failed" shape
// (CI reads that shape as a test runner's closing line).
func cell(s *confScenario) string {
	if s == nil {
		return "not run"
	}
	mark := "✓"
	if !s.passes() {
		mark = "✗"
	}
	c := fmt.Sprintf("%s %d/%d", mark, s.Success, s.Success+s.Failure)
	var extra []string
	if s.Warning > 0 {
		extra = append(extra, fmt.Sprintf("%d warning", s.Warning))
	}
	if n := infoOnly(s); n > 0 {
		extra = append(extra, fmt.Sprintf("%d info", n))
	}
	if len(extra) > 0 {
		c += " (" + strings.Join(extra, ", ") + ")"
	}
	return c
}

// infoOnly counts INFO checks whose id is not just a request/response log entry.
func infoOnly(s *confScenario) int {
	n := 0
	for _, c := range s.Checks {
		if c.Status == "INFO" && c.ID != "server-info" && !strings.HasPrefix(c.ID, "incoming-") && !strings.HasPrefix(c.ID, "outgoing-") {
			n++
		}
	}
	return n
}

// conformanceTableN renders one column per run; notes compare each later
// run with the first.
func conformanceTableN(labels []string, runs []*confRun) string {
	names := append([]string(nil), runs[0].Order...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, r := range runs[1:] {
		for _, n := range r.Order {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	var b strings.Builder
	b.WriteString("| scenario | " + strings.Join(labels, " | ") + " |\n|---|" + strings.Repeat("---|", len(runs)) + "\n")
	row := func(first string, cell func(r *confRun) string) {
		cells := []string{first}
		for _, r := range runs {
			cells = append(cells, cell(r))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for _, n := range names {
		row(n, func(r *confRun) string { return cell(r.Scenarios[n]) })
	}
	row("**scenarios passing**", func(r *confRun) string { return fmt.Sprintf("**%d of %d**", scenariosPassing(r), len(r.Order)) })
	row("**checks ok / scored**", func(r *confRun) string { return fmt.Sprintf("**%d/%d**", r.Passed, r.Passed+r.Failed) })
	row("suite wall time", func(r *confRun) string { return fmt.Sprintf("%.1f s", r.Seconds) })
	var notes []string
	for i, r := range runs[1:] {
		for _, n := range names {
			if d, v := runs[0].Scenarios[n], r.Scenarios[n]; d != nil && v != nil {
				for _, note := range downgraded(d, v) {
					notes = append(notes, fmt.Sprintf("(%s) %s", labels[i+1], note))
				}
			}
		}
	}
	sort.Strings(notes)
	for _, n := range notes {
		b.WriteString("\n- " + n + "\n")
	}
	return b.String()
}
